import { queryOptions } from '@tanstack/react-query';
import { clientListQuery, type ClientSearch } from '../lib/client-filters.js';
import { apiRequest } from './client.js';
import type { Client, ClientList, StatusData, VaultStatus } from './types.js';

export const statusQuery = queryOptions({
  queryKey: ['status'],
  queryFn: () => apiRequest<{ data: StatusData }>('/status').then((r) => r.data),
  refetchInterval: 10_000,
});

export const vaultStatusQuery = queryOptions({
  queryKey: ['vault-status'],
  queryFn: () => apiRequest<{ data: VaultStatus }>('/vault-admin').then((r) => r.data),
});

/**
 * A page of the clients list. Fresh for a second: the route's loader asks for it while the page's chunk loads,
 * and the page mounting just after must not ask again (a second request, and its loading indicator). Keyed by
 * the API query, not the whole search: the shown columns and the saved view's id ask svcd for the same page.
 */
export const clientListQueryOptions = (search: ClientSearch) => {
  const query = clientListQuery(search);
  return queryOptions({
    queryKey: ['clients', query.toString()],
    queryFn: () => apiRequest<ClientList & { data: Client[] }>('/clients', { query }),
    staleTime: 1000,
  });
};

export const clientQuery = (id: string) =>
  queryOptions({
    queryKey: ['client', id],
    queryFn: () => apiRequest<{ data: Client }>(`/clients/${encodeURIComponent(id)}`).then((r) => r.data),
    refetchInterval: 10_000,
  });
