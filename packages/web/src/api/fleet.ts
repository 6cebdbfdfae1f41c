import { queryOptions } from '@tanstack/react-query';
import type { paths } from './openapi.gen.js';
import { apiRequest } from './client.js';

type Ok<Op> = Op extends { responses: { 200: { content: { 'application/json': infer Body } } } }
  ? Body
  : never;

export type SavedView = Ok<paths['/api/v1/me/views']['get']>['data'][number];
export type SavedViewInput = Pick<SavedView, 'name' | 'page' | 'search' | 'columns' | 'sort'>;
type TunnelList = Ok<paths['/api/v1/tunnels']['get']>;
/** An element of GET /tunnels with every field (no sparse fieldset asked). */
export type TunnelOverview = Required<TunnelList['data'][number]>;
export type RunSummary = Required<Ok<paths['/api/v1/commands']['get']>['data'][number]>;
type RunItem = Required<Ok<paths['/api/v1/commands/{jid}']['get']>['data']>;

export const savedViewsQuery = queryOptions({
  queryKey: ['saved-views'],
  queryFn: () => apiRequest<{ data: SavedView[] }>('/me/views').then((r) => r.data),
});

export const saveView = (view: SavedViewInput) =>
  apiRequest<{ data: SavedView }>('/me/views', { method: 'POST', body: view }).then((r) => r.data);

export const updateView = (id: string, changes: Partial<Omit<SavedViewInput, 'page'>>) =>
  apiRequest<{ data: SavedView }>(`/me/views/${encodeURIComponent(id)}`, {
    method: 'PUT',
    body: changes,
  }).then((r) => r.data);

export const deleteView = (id: string) =>
  apiRequest<void>(`/me/views/${encodeURIComponent(id)}`, { method: 'DELETE' });

/** Every tunnel of the connected clients (the first 1,000; the count says how many there are). */
export const tunnelsQuery = queryOptions({
  queryKey: ['tunnels'],
  queryFn: () =>
    apiRequest<{ data: TunnelOverview[]; meta: { count: number } }>('/tunnels', {
      query: new URLSearchParams({ 'page[limit]': '1000' }),
    }),
  refetchInterval: 10_000,
});

/** The tunnels of one client (from GET /tunnels, which adds owner and timers to the client record's list). */
export const clientTunnelsQuery = (clientId: string) =>
  queryOptions({
    queryKey: ['tunnels', clientId],
    queryFn: () =>
      apiRequest<{ data: TunnelOverview[] }>('/tunnels', {
        query: new URLSearchParams({ 'filter[client_id]': clientId, 'page[limit]': '1000' }),
      }).then((r) => r.data.filter((t) => t.client_id === clientId)),
    refetchInterval: 10_000,
  });

export const closeTunnel = (clientId: string, tunnelId: string, force = false) =>
  apiRequest<void>(`/clients/${encodeURIComponent(clientId)}/tunnels/${encodeURIComponent(tunnelId)}`, {
    method: 'DELETE',
    ...(force ? { query: new URLSearchParams({ force: 'true' }) } : {}),
  });

export const forgetClient = (clientId: string) =>
  apiRequest<void>(`/clients/${encodeURIComponent(clientId)}`, { method: 'DELETE' });

export interface RecentRun extends RunSummary {
  status: RunItem['status'] | undefined;
  finished_at: string | null | undefined;
}

const STATUS_ORDER: Record<string, number> = { failed: 0, unknown: 1, running: 2, successful: 3 };

/**
 * The last runs on many clients, failed ones first (then by start, newest first). GET /commands lists runs
 * without their outcome, so each one's status comes from GET /commands/{jid} with only the fields needed.
 */
export const recentRunsQuery = queryOptions({
  queryKey: ['recent-runs'],
  queryFn: async (): Promise<RecentRun[]> => {
    const list = await apiRequest<{ data: RunSummary[] }>('/commands', {
      query: new URLSearchParams({ sort: '-started_at', 'page[limit]': '8' }),
    });
    const runs = await Promise.all(
      list.data.map(async (run) => {
        const item = await apiRequest<{ data: Partial<RunItem> }>(
          `/commands/${encodeURIComponent(run.jid)}`,
          {
            query: new URLSearchParams({ 'fields[commands]': 'status,finished_at' }),
          },
        ).catch(() => undefined);
        return { ...run, status: item?.data.status, finished_at: item?.data.finished_at };
      }),
    );
    return runs.sort(
      (a, b) =>
        (STATUS_ORDER[a.status ?? ''] ?? 4) - (STATUS_ORDER[b.status ?? ''] ?? 4) ||
        b.started_at.localeCompare(a.started_at),
    );
  },
  refetchInterval: 15_000,
});
