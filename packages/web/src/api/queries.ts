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

/** Connected clients with their open tunnels (the first 500; the count says how many there are). */
export const openTunnelsQuery = queryOptions({
  queryKey: ['open-tunnels'],
  queryFn: async () => {
    const query = new URLSearchParams({
      'filter[connection_state]': 'connected',
      'fields[clients]': 'id,name,tunnels',
      'page[limit]': '500',
    });
    const list = await apiRequest<ClientList>('/clients', { query });
    const tunnels = list.data.reduce((sum, client) => sum + (client.tunnels?.length ?? 0), 0);
    return { tunnels, counted: list.data.length, connected: list.meta.count };
  },
  refetchInterval: 15_000,
});

export const clientListQueryOptions = (search: ClientSearch) =>
  queryOptions({
    queryKey: ['clients', search],
    queryFn: () =>
      apiRequest<ClientList & { data: Client[] }>('/clients', { query: clientListQuery(search) }),
  });

export const clientQuery = (id: string) =>
  queryOptions({
    queryKey: ['client', id],
    queryFn: () => apiRequest<{ data: Client }>(`/clients/${encodeURIComponent(id)}`).then((r) => r.data),
    refetchInterval: 10_000,
  });
