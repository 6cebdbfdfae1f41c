/** Schedules (GET/POST/PUT/DELETE /schedules, GET /schedules/{id}/runs): queries and actions of their pages. */
import { queryOptions } from '@tanstack/react-query';
import { apiRequest } from './client.js';
import type { paths } from './openapi.gen.js';

type Ok<Op> = Op extends { responses: { 200: { content: { 'application/json': infer Body } } } }
  ? Body
  : never;
export type Schedule = Required<Ok<paths['/api/v1/schedules/{id}']['get']>['data']>;
type History = Ok<paths['/api/v1/schedules/{id}/runs']['get']>;
export type ScheduleFiring = History['data'][number];
export type FiringCounts = History['meta']['outcomes'];

export const SCHEDULES_PAGE_SIZE = 50;

export const scheduleListQuery = (offset: number) =>
  queryOptions({
    queryKey: ['schedules', offset],
    queryFn: () =>
      apiRequest<{ data: Schedule[]; meta: { count: number } }>('/schedules', {
        query: new URLSearchParams({
          sort: 'name',
          'page[limit]': String(SCHEDULES_PAGE_SIZE),
          'page[offset]': String(offset),
        }),
      }),
    refetchInterval: 30_000,
  });

export const scheduleQuery = (id: string) =>
  queryOptions({
    queryKey: ['schedule', id],
    queryFn: () => apiRequest<{ data: Schedule }>(`/schedules/${encodeURIComponent(id)}`).then((r) => r.data),
    refetchInterval: 30_000,
  });

export const scheduleHistoryQuery = (id: string) =>
  queryOptions({
    queryKey: ['schedule-history', id],
    queryFn: () => apiRequest<History>(`/schedules/${encodeURIComponent(id)}/runs`),
    refetchInterval: 15_000,
  });

export const createSchedule = (body: Record<string, unknown>) =>
  apiRequest<{ data: Schedule }>('/schedules', { method: 'POST', body }).then((r) => r.data);

export const replaceSchedule = (id: string, body: Record<string, unknown>) =>
  apiRequest<{ data: Schedule }>(`/schedules/${encodeURIComponent(id)}`, { method: 'PUT', body }).then(
    (r) => r.data,
  );

export const deleteSchedule = (id: string) =>
  apiRequest<undefined>(`/schedules/${encodeURIComponent(id)}`, { method: 'DELETE' });
