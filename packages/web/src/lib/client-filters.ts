/**
 * The clients page's filters as they live in the URL (so a view is a link) and as GET /clients takes them (the
 * list grammar: `filter[field]=a,b` is a OR b, several filters AND, `*` a wildcard, case-insensitive).
 */
export const CLIENT_SORT_FIELDS = ['id', 'name', 'os', 'hostname', 'version', 'connection_state'] as const;
export type ClientSortField = (typeof CLIENT_SORT_FIELDS)[number];

export const PAGE_SIZES = [50, 100, 200, 500] as const;
export const DEFAULT_PAGE_SIZE = 100;

export type ConnectionState = 'connected' | 'disconnected';

export interface ClientSearch {
  /** Free text found in any field. */
  q?: string;
  state?: ConnectionState;
  /** Comma-separated; a client with any of them matches. */
  tags?: string;
  /** Client group id (wildcards allowed). */
  group?: string;
  /** A sort field, `-field` for descending. */
  sort?: string;
  /** 1-based. */
  page?: number;
  limit?: number;
  /** The shown columns, comma-separated column ids in order; absent = the default columns. */
  cols?: string;
  /** The saved view this page was opened from (its id). */
  view?: string;
}

const nonEmpty = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;

function positiveInt(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : NaN;
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

export function isSortable(sort: string): boolean {
  const field = sort.startsWith('-') ? sort.slice(1) : sort;
  return (CLIENT_SORT_FIELDS as readonly string[]).includes(field);
}

/**
 * The router's `validateSearch`: whatever the URL holds becomes a clean ClientSearch; unknown keys and values
 * that cannot be right are dropped (a hand-edited link still opens the page), defaults are left out of the URL.
 */
export function parseClientSearch(raw: Record<string, unknown>): ClientSearch {
  const search: ClientSearch = {};
  const q = nonEmpty(raw.q);
  if (q) search.q = q;
  if (raw.state === 'connected' || raw.state === 'disconnected') search.state = raw.state;
  const tags = nonEmpty(raw.tags);
  if (tags) search.tags = tags;
  const group = nonEmpty(raw.group);
  if (group) search.group = group;
  const sort = nonEmpty(raw.sort);
  if (sort && isSortable(sort) && sort !== 'name') search.sort = sort;
  const page = positiveInt(raw.page);
  if (page && page > 1) search.page = page;
  const limit = positiveInt(raw.limit);
  if (limit && (PAGE_SIZES as readonly number[]).includes(limit) && limit !== DEFAULT_PAGE_SIZE) {
    search.limit = limit;
  }
  const cols = nonEmpty(raw.cols);
  if (cols && /^[A-Za-z0-9_.,-]{1,2000}$/.test(cols)) search.cols = cols;
  const view = nonEmpty(raw.view);
  if (view && /^[A-Za-z0-9_-]{1,32}$/.test(view)) search.view = view;
  return search;
}

/** Free text becomes a substring match unless the operator wrote wildcards. */
export const substringPattern = (text: string): string => (text.includes('*') ? text : `*${text}*`);

/** The GET /clients query for a search: one page, sorted, filtered. */
export function clientListQuery(search: ClientSearch): URLSearchParams {
  const query = new URLSearchParams();
  query.set('sort', search.sort ?? 'name');
  if (search.q) query.append('filter[*]', substringPattern(search.q));
  if (search.state) query.append('filter[connection_state]', search.state);
  if (search.tags) query.append('filter[tags]', search.tags);
  if (search.group) query.append('filter[groups]', search.group);
  const limit = search.limit ?? DEFAULT_PAGE_SIZE;
  query.set('page[limit]', String(limit));
  query.set('page[offset]', String(((search.page ?? 1) - 1) * limit));
  return query;
}

/** The next sort after a click on a column header: ascending, then descending, then back to the default. */
export function nextSort(current: string | undefined, field: ClientSortField): string | undefined {
  if (current === field) return `-${field}`;
  if (current === `-${field}`) return undefined;
  return field;
}

/** Whether any filter narrows the list (the empty state then says to clear them). */
export const isFiltered = (search: ClientSearch): boolean =>
  Boolean(search.q || search.state || search.tags || search.group);

/**
 * What a saved view keeps of a search: the URL query string of the filters, sort, page size and columns (not
 * the page number or the view's own id), keys in a fixed order so equal views compare equal.
 */
export function viewSearchString(search: ClientSearch): string {
  const params = new URLSearchParams();
  for (const key of ['q', 'state', 'tags', 'group', 'sort', 'limit', 'cols'] as const) {
    const value = search[key];
    if (value !== undefined) params.set(key, String(value));
  }
  return params.toString();
}

/** The search a saved view's query string stands for (cleaned like any URL). */
export const searchOfView = (viewSearch: string, id: string): ClientSearch => ({
  ...parseClientSearch(Object.fromEntries(new URLSearchParams(viewSearch))),
  view: id,
});

/**
 * How "every client matching the filter" is handed to the run page: the run API targets by client ids, group
 * ids, tags or labels, one kind at a time. A filter on tags alone or on one group id alone (no wildcard) is the
 * same set of clients as that target, so it goes as the filter itself; anything else (free text, connection
 * state, several filters) has no equal target and goes as the matching clients' ids.
 */
export function runTargetOf(search: ClientSearch): { tags: string } | { group_ids: string } | 'ids' {
  const { q, state, tags, group } = search;
  if (q || state) return 'ids';
  if (tags && !group) return { tags };
  if (group && !tags && !group.includes('*') && !group.includes(',')) return { group_ids: group };
  return 'ids';
}
