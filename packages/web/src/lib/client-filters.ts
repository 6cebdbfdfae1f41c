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
