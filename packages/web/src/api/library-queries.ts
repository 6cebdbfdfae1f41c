import { queryOptions } from '@tanstack/react-query';
import { apiRequest } from './client.js';
import type { paths } from './openapi.gen.js';

type ScriptList = paths['/api/v1/library/scripts']['get']['responses'][200]['content']['application/json'];
export type LibraryScript = Required<ScriptList['data'][number]>;
export type LibraryScriptBody = NonNullable<
  paths['/api/v1/library/scripts']['post']['requestBody']
>['content']['application/json'];

export interface LibrarySearch {
  /** Part of the name (wildcards added around it). */
  q?: string;
  sort?: 'name' | '-updated_at';
  /** Only scripts with this tag (of the page loaded). */
  tag?: string;
  page?: number;
}

export const LIBRARY_PAGE_SIZE = 50;

/** The library's URL search params, checked (a filter is a link). */
export function parseLibrarySearch(raw: Record<string, unknown>): LibrarySearch {
  const out: LibrarySearch = {};
  if (typeof raw.q === 'string' && raw.q !== '') out.q = raw.q;
  if (raw.sort === 'name' || raw.sort === '-updated_at') out.sort = raw.sort;
  if (typeof raw.tag === 'string' && raw.tag !== '') out.tag = raw.tag;
  const page = Number(raw.page);
  if (Number.isInteger(page) && page > 1) out.page = page;
  return out;
}

/** The query of GET /library/scripts for a search. */
export function libraryListQuery(search: LibrarySearch): URLSearchParams {
  const query = new URLSearchParams({
    sort: search.sort ?? 'name',
    'page[limit]': String(LIBRARY_PAGE_SIZE),
    'page[offset]': String(((search.page ?? 1) - 1) * LIBRARY_PAGE_SIZE),
  });
  if (search.q) query.set('filter[name]', `*${search.q}*`);
  return query;
}

export const libraryListQueryOptions = (search: LibrarySearch) =>
  queryOptions({
    queryKey: ['library', search],
    queryFn: () =>
      apiRequest<{ data: LibraryScript[]; meta: { count: number } }>('/library/scripts', {
        query: libraryListQuery(search),
      }),
  });

export const libraryScriptQuery = (id: string) =>
  queryOptions({
    queryKey: ['library-script', id],
    queryFn: () =>
      apiRequest<{ data: LibraryScript }>(`/library/scripts/${encodeURIComponent(id)}`).then((r) => r.data),
  });

/** The editor's highlighting for an interpreter ('' = the client's default shell). */
export function languageOfInterpreter(interpreter: string): 'shell' | 'powershell' | 'python' | 'plain' {
  const name = interpreter.toLowerCase();
  if (name.includes('powershell') || name.includes('pwsh')) return 'powershell';
  if (name.includes('python')) return 'python';
  if (name.includes('cmd')) return 'plain';
  return 'shell';
}
