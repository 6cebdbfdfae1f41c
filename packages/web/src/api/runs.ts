/** Multi-client runs, a client's job history and library scripts: queries and actions of the Runs pages. */
import { queryOptions } from '@tanstack/react-query';
import type { ChildJob } from '../lib/run-jobs.js';
import { session } from '../session/session.js';
import { apiErrorOf } from './api-error.js';
import { API_BASE, apiRequest } from './client.js';
import type { paths } from './openapi.gen.js';

type Ok<Op> = Op extends { responses: { 200: { content: { 'application/json': infer Body } } } }
  ? Body
  : never;
export type RunSummary = Required<Ok<paths['/api/v1/commands']['get']>['data'][number]>;
/** A staged run's progress (GET /commands/{jid}: rollout). */
export type RolloutProgress = NonNullable<Ok<paths['/api/v1/commands/{jid}']['get']>['data']['rollout']>;
export type Run = RunSummary & { status: string; finished_at: string | null; rollout?: RolloutProgress };
/** `skipped` counts the clients a staged run stopped before. */
export type RunCounts = Record<'running' | 'successful' | 'failed' | 'unknown', number> & {
  skipped?: number;
};
export type LibraryScript = Required<Ok<paths['/api/v1/library/scripts']['get']>['data'][number]>;

export const RUNS_PAGE_SIZE = 50;

export const runListQuery = (offset: number) =>
  queryOptions({
    queryKey: ['runs', offset],
    queryFn: () =>
      apiRequest<{ data: RunSummary[]; meta: { count: number } }>('/commands', {
        query: new URLSearchParams({
          sort: '-started_at',
          'page[limit]': String(RUNS_PAGE_SIZE),
          'page[offset]': String(offset),
          'fields[commands]':
            'jid,started_at,created_by,command,is_script,concurrent,client_ids,tags,labels,group_ids',
        }),
      }),
    refetchInterval: 10_000,
  });

/** The run without its children (they are paged separately) but with its state and counts. */
export const runQuery = (jid: string) =>
  queryOptions({
    queryKey: ['run', jid],
    queryFn: async () => {
      const fields = [
        'jid,started_at,created_by,client_ids,group_ids,tags,labels,command,cwd,interpreter,is_sudo',
        'is_script,timeout_sec,concurrent,abort_on_err,status,finished_at,rollout',
      ].join(',');
      const res = await apiRequest<{ data: Run; meta: { jobs: RunCounts } }>(
        `/commands/${encodeURIComponent(jid)}`,
        { query: new URLSearchParams({ 'fields[commands]': fields }) },
      );
      return { run: res.data, counts: res.meta.jobs };
    },
    refetchInterval: (query) => (query.state.data?.run.status === 'running' ? 1000 : false),
  });

export const CHILD_PAGE = 1000;

/** Every child of a run, read 1,000 at a time. */
export async function fetchRunChildren(jid: string): Promise<ChildJob[]> {
  const all: ChildJob[] = [];
  for (let offset = 0; ; offset += CHILD_PAGE) {
    const page = await apiRequest<{ data: ChildJob[]; meta: { count: number } }>(
      `/commands/${encodeURIComponent(jid)}/jobs`,
      { query: new URLSearchParams({ 'page[limit]': String(CHILD_PAGE), 'page[offset]': String(offset) }) },
    );
    all.push(...page.data);
    if (page.data.length < CHILD_PAGE || all.length >= page.meta.count) return all;
  }
}

export const rerunRun = (jid: string, only: 'failed' | 'all') =>
  apiRequest<{ data: { jid: string } }>(`/commands/${encodeURIComponent(jid)}/rerun`, {
    method: 'POST',
    query: new URLSearchParams({ only }),
  }).then((r) => r.data.jid);

export const startRun = (path: '/commands' | '/scripts', body: Record<string, unknown>) =>
  apiRequest<{ data: { jid: string } }>(path, { method: 'POST', body }).then((r) => r.data.jid);

/** The run as CSV from svcd (GET /commands/{jid} with Accept: text/csv), as a file name and its text. */
export async function fetchRunCsv(jid: string): Promise<{ name: string; text: string }> {
  const token = session.get()?.token;
  const response = await fetch(`${API_BASE}/commands/${encodeURIComponent(jid)}`, {
    headers: { accept: 'text/csv', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  });
  if (!response.ok) throw apiErrorOf(response.status, await response.json().catch(() => null));
  const disposition = response.headers.get('content-disposition') ?? '';
  const name = /filename="([^"]+)"/.exec(disposition)?.[1] ?? `run-${jid}.csv`;
  return { name, text: await response.text() };
}

/** How many clients a GET /clients query matches. */
export const clientCount = (query: URLSearchParams) =>
  apiRequest<{ meta: { count: number } }>('/clients', { query }).then((r) => r.meta.count);

export const libraryScriptsQuery = queryOptions({
  queryKey: ['library-scripts', 'for-runs'],
  queryFn: () =>
    apiRequest<{ data: LibraryScript[] }>('/library/scripts', {
      query: new URLSearchParams({ sort: 'name', 'page[limit]': '100' }),
    }).then((r) => r.data),
});

export const CLIENT_JOBS_PAGE = 20;

export const clientJobsQuery = (clientId: string, offset: number) =>
  queryOptions({
    queryKey: ['client-jobs', clientId, offset],
    queryFn: () =>
      apiRequest<{ data: ChildJob[]; meta: { count: number } }>(
        `/clients/${encodeURIComponent(clientId)}/commands`,
        {
          query: new URLSearchParams({
            sort: '-created_at',
            'page[limit]': String(CLIENT_JOBS_PAGE),
            'page[offset]': String(offset),
          }),
        },
      ),
    refetchInterval: 10_000,
  });
