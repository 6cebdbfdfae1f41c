import { queryOptions } from '@tanstack/react-query';
import { apiRequest } from './client.js';
import type { paths } from './openapi.gen.js';

type VaultList = paths['/api/v1/vault']['get']['responses'][200]['content']['application/json'];
export type VaultListItem = Required<VaultList['data'][number]>;
type VaultEntryAnswer = paths['/api/v1/vault/{id}']['get']['responses'][200]['content']['application/json'];
export type VaultEntry = VaultEntryAnswer['data'];
/** An entry without its value: what the page keeps while the value is hidden. */
export type VaultEntryInfo = Omit<VaultEntry, 'value'>;
export type VaultEntryBody = NonNullable<
  paths['/api/v1/vault']['post']['requestBody']
>['content']['application/json'];

export const VAULT_TYPES = ['secret', 'text', 'string', 'markdown'] as const;

/** GET /vault, the key or client id containing `q`. */
export const vaultEntriesQuery = (q: string) =>
  queryOptions({
    queryKey: ['vault-entries', q],
    queryFn: async () => {
      const query = new URLSearchParams({ sort: 'key', 'page[limit]': '1000' });
      if (!q) return apiRequest<{ data: VaultListItem[]; meta: { count: number } }>('/vault', { query });
      // Filters combine with AND, so a search on key or client id is two requests merged.
      const search = (field: 'key' | 'client_id') => {
        const filtered = new URLSearchParams(query);
        filtered.set(`filter[${field}]`, `*${q}*`);
        return apiRequest<{ data: VaultListItem[]; meta: { count: number } }>('/vault', { query: filtered });
      };
      const [byKey, byClient] = await Promise.all([search('key'), search('client_id')]);
      const byId = new Map([...byKey.data, ...byClient.data].map((entry) => [entry.id, entry]));
      const data = [...byId.values()].sort((a, b) => a.key.localeCompare(b.key));
      return { data, meta: { count: data.length } };
    },
  });

const entryPath = (id: number) => `/vault/${id}`;

/** An entry's facts; the value svcd sends along is dropped here and never enters the query cache. */
export const vaultEntryInfoQuery = (id: number) =>
  queryOptions({
    queryKey: ['vault-entry-info', id],
    queryFn: async (): Promise<VaultEntryInfo> => {
      const { data } = await apiRequest<VaultEntryAnswer>(entryPath(id));
      const { value: _dropped, ...info } = data;
      return info;
    },
  });

/** The value, read only while shown; the page removes this query when the value is hidden (see VaultValue). */
export const vaultEntryValueQuery = (id: number) =>
  queryOptions({
    queryKey: ['vault-entry-value', id],
    queryFn: () => apiRequest<VaultEntryAnswer>(entryPath(id)).then((r) => r.data.value),
    gcTime: 0,
    staleTime: 0,
    retry: false,
  });

/** Reads an entry's value once (to edit it), outside the cache. */
export const readVaultValue = (id: number): Promise<string> =>
  apiRequest<VaultEntryAnswer>(entryPath(id)).then((r) => r.data.value);
