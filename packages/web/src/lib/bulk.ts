import { apiRequest } from '../api/client.js';
import { clientListQuery, runTargetOf, type ClientSearch } from './client-filters.js';

/** Most clients a bulk action resolves from a filter to ids (each page of GET /clients holds 500). */
export const MAX_BULK_CLIENTS = 10_000;
const PAGE = 500;

export interface ClientRef {
  id: string;
  connection_state: 'connected' | 'disconnected';
}

/** Every client a filter matches (id and state only), page by page; refuses above MAX_BULK_CLIENTS. */
export async function matchingClients(search: ClientSearch): Promise<ClientRef[]> {
  const found: ClientRef[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const query = clientListQuery({ ...search, page: undefined, limit: undefined });
    query.set('fields[clients]', 'id,connection_state');
    query.set('page[limit]', String(PAGE));
    query.set('page[offset]', String(offset));
    const page = await apiRequest<{ data: ClientRef[]; meta: { count: number } }>('/clients', { query });
    if (page.meta.count > MAX_BULK_CLIENTS) {
      throw new Error(
        `${page.meta.count} clients match: narrow the filter to at most ${MAX_BULK_CLIENTS} for this action`,
      );
    }
    found.push(...page.data);
    if (page.data.length < PAGE || found.length >= page.meta.count) return found;
  }
}

/**
 * The /runs/new link for the chosen clients: their ids, or for "everything matching the filter" the filter
 * itself where the run API targets the same set (tags alone, one group alone), else the matching ids.
 */
export async function runLinkFor(selection: { ids: string[] } | { search: ClientSearch }): Promise<string> {
  const params = new URLSearchParams();
  if ('ids' in selection) {
    params.set('client_ids', selection.ids.join(','));
  } else {
    const target = runTargetOf(selection.search);
    if (target === 'ids') {
      params.set('client_ids', (await matchingClients(selection.search)).map((c) => c.id).join(','));
    } else {
      for (const [key, value] of Object.entries(target)) params.set(key, value);
    }
  }
  return `/runs/new?${params.toString()}`;
}
