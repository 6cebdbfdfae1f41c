/** The audit log (GET /auditlog): the page's query and its CSV export. */
import { queryOptions } from '@tanstack/react-query';
import { session } from '../session/session.js';
import { apiErrorOf } from './api-error.js';
import { API_BASE, apiRequest } from './client.js';
import type { paths } from './openapi.gen.js';

type Ok<Op> = Op extends { responses: { 200: { content: { 'application/json': infer Body } } } }
  ? Body
  : never;
export type AuditRow = Required<Ok<paths['/api/v1/auditlog']['get']>['data'][number]>;

export const AUDIT_PAGE_SIZE = 50;

/** The filters of the audit page, as in its URL. */
export interface AuditFilters {
  username?: string;
  action?: string;
  client_id?: string;
  since?: string;
  until?: string;
}

export const AUDIT_FILTER_KEYS = ['username', 'action', 'client_id', 'since', 'until'] as const;

function auditParams(filters: AuditFilters): URLSearchParams {
  const query = new URLSearchParams({ sort: '-timestamp' });
  for (const key of ['username', 'action', 'client_id'] as const) {
    const value = filters[key];
    if (value) query.set(`filter[${key}]`, value);
  }
  if (filters.since) query.set('since', filters.since);
  if (filters.until) query.set('until', filters.until);
  return query;
}

export const auditQuery = (filters: AuditFilters, offset: number) =>
  queryOptions({
    queryKey: ['auditlog', filters, offset],
    queryFn: () => {
      const query = auditParams(filters);
      query.set('page[limit]', String(AUDIT_PAGE_SIZE));
      query.set('page[offset]', String(offset));
      return apiRequest<{ data: AuditRow[]; meta: { count: number } }>('/auditlog', { query });
    },
  });

/** Every matching record as CSV (GET /auditlog with Accept: text/csv). */
export async function fetchAuditCsv(filters: AuditFilters): Promise<string> {
  const token = session.get()?.token;
  const response = await fetch(`${API_BASE}/auditlog?${auditParams(filters).toString()}`, {
    headers: { accept: 'text/csv', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  });
  if (!response.ok) throw apiErrorOf(response.status, await response.json().catch(() => null));
  return response.text();
}
