/**
 * The list query grammar shared by every list endpoint: sorting, filtering, sparse fieldsets and pagination.
 *
 * `parseListQuery` turns the raw URL query into a validated `ListQuery` (or throws one AppError listing every
 * problem); `applyListQuery` runs a `ListQuery` over an in-memory list. SQL-backed lists use the server's
 * `storage/list-query-sql.ts`, which applies the same `ListQuery` to a Kysely query.
 *
 * Grammar (parameters not listed here are ignored, so endpoints may have their own):
 * - `sort=name` ascending, `sort=-name` descending; repeatable (and comma-separable), later keys break ties.
 *   Default: `spec.defaultSort`.
 * - `filter[name]=a,b` matches `a` OR `b`; `filter[name|hostname]=a` matches in either field; `filter[*]=a`
 *   matches in any filterable field. Several filter parameters (also the same one repeated) combine with AND.
 *   `*` in a value is a wildcard for any run of characters; matching is case-insensitive; an empty value
 *   matches empty values (null, missing, '', []).
 * - On time fields (`ListSpec.timeFields`, SQL lists only) a filter value names a period instead:
 *   `filter[created_at]=2024-05-01` matches that day (see time-filter.ts).
 * - `fields[<resource>]=a,b` keeps only those fields of each item.
 * - `page[limit]=N&page[offset]=M` on paginated lists only.
 *
 * No node:* imports: this module is shared with browsers and agents.
 */
import { AppError, ERROR_CODES } from './errors.js';
import type { ErrorItem } from './errors.js';
import { parseTimePeriod, TIME_FILTER_HINT } from './time-filter.js';

/** What one list endpoint supports. */
export interface ListSpec {
  /** Resource name used in `fields[<resource>]`, e.g. `clients`. */
  resource: string;
  sortable: readonly string[];
  /** Sort used when the request has no `sort`: a field, `-field` for descending, or several comma-separated. */
  defaultSort: string;
  filterable: readonly string[];
  /**
   * Filterable fields that hold times: their filter values are RFC 3339 times or prefixes of one (see
   * time-filter.ts), and a filter on time fields alone with any other value is a 400. The SQL list maps them to
   * `type: 'time'` columns; `applyListQuery` (in memory) does not know them.
   */
  timeFields?: readonly string[];
  /** Fields allowed in `fields[<resource>]`. */
  fields: readonly string[];
  /** Fields returned when the request has no `fields[<resource>]`; all fields when absent. */
  defaultFields?: readonly string[];
  /** Present when the list is paginated. */
  pagination?: { defaultLimit: number; maxLimit: number };
}

export type SortDirection = 'asc' | 'desc';

export interface ListSort {
  field: string;
  direction: SortDirection;
}

/** Matches when any of `fields` matches any of `values` (raw values as sent, `*` being the wildcard). */
export interface ListFilter {
  fields: string[];
  values: string[];
}

export interface ListPage {
  limit: number;
  offset: number;
}

export interface ListQuery {
  /** Never empty: the request's sort keys, or the spec's default. */
  sort: ListSort[];
  /** Combined with AND. */
  filters: ListFilter[];
  /** Sparse fieldset; absent = every field. */
  fields?: string[];
  /** Present exactly when the list is paginated. */
  page?: ListPage;
}

/**
 * The raw URL query: Fastify's `request.query` (a plain object keyed by the literal parameter names, e.g.
 * `filter[name]`, whose repeated parameters hold arrays) or a `URLSearchParams`.
 */
export type ListQueryInput = URLSearchParams | Readonly<Record<string, unknown>>;

const LIST_PARAM = /^(?:sort|filter|fields|page)(?:\[|$)/;
const BRACKETED = /^(filter|fields|page)\[([^[\]]*)\]$/;

const invalidQuery = (problems: ErrorItem[]): AppError => {
  const [first, ...rest] = problems as [ErrorItem, ...ErrorItem[]];
  return new AppError('invalid', first.code, first.title, first.detail, rest);
};

const item = (title: string, detail: string): ErrorItem => ({
  code: ERROR_CODES.invalidQuery,
  title,
  detail,
});

const entriesOf = (query: ListQueryInput | null | undefined): [string, unknown][] => {
  if (query === null || query === undefined) return [];
  if (query instanceof URLSearchParams) return [...query.entries()];
  const out: [string, unknown][] = [];
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value as unknown[]) out.push([key, v]);
    else out.push([key, value]);
  }
  return out;
};

const splitList = (value: string): string[] => {
  const parts = value.split(',').map((p) => p.trim());
  const nonEmpty = parts.filter((p) => p !== '');
  return nonEmpty.length > 0 ? nonEmpty : [''];
};

const parseSortKeys = (raw: string): { keys: ListSort[]; empty: boolean } => {
  const keys: ListSort[] = [];
  let empty = false;
  for (const part of raw.split(',')) {
    const token = part.trim();
    const desc = token.startsWith('-');
    const field = (desc ? token.slice(1) : token).trim();
    if (field === '') empty = true;
    else keys.push({ field, direction: desc ? 'desc' : 'asc' });
  }
  return { keys, empty };
};

const listOf = (names: readonly string[]): string => (names.length > 0 ? names.join(', ') : '(none)');

const INTEGER = /^\d+$/;

/**
 * Most field × value comparisons one query may ask for. Each becomes a term of the SQL WHERE; SQLite refuses an
 * expression deeper than 1000, and no one filters on hundreds of values by hand.
 */
export const MAX_FILTER_TERMS = 500;

/** '' (no time), `*` alone (any time) or a time prefix. */
const isTimeFilterValue = (value: string): boolean =>
  value === '' || value.replace(/\*/g, '') === '' || parseTimePeriod(value) !== undefined;

/**
 * Validates the list parameters of a request against the endpoint's spec. Every problem is collected; when there
 * is at least one, throws a single AppError (kind `invalid`, code `ERR_INVALID_QUERY`) whose title is the first
 * problem and whose `extra` holds the rest. Parameters that are not list parameters are ignored.
 */
export function parseListQuery(query: ListQueryInput | null | undefined, spec: ListSpec): ListQuery {
  const problems: ErrorItem[] = [];
  const sort: ListSort[] = [];
  const filters: ListFilter[] = [];
  let fields: string[] | undefined;
  let limitRaw: string | undefined;
  let offsetRaw: string | undefined;
  const seenPage = new Set<string>();

  for (const [key, rawValue] of entriesOf(query)) {
    if (!LIST_PARAM.test(key)) continue;
    const shown = typeof rawValue === 'string' ? `${key}=${rawValue}` : key;
    if (typeof rawValue !== 'string') {
      problems.push(item(`query parameter '${key}' must be a plain value`, shown));
      continue;
    }
    const value = rawValue;

    if (key === 'sort') {
      const { keys, empty } = parseSortKeys(value);
      if (empty) problems.push(item('sort must name a field, e.g. sort=name or sort=-name', shown));
      for (const k of keys) {
        if (!spec.sortable.includes(k.field)) {
          problems.push(
            item(
              spec.sortable.length > 0
                ? `unsupported sort field '${k.field}'; sortable fields: ${listOf(spec.sortable)}`
                : `unsupported sort field '${k.field}'; this list cannot be sorted`,
              shown,
            ),
          );
        } else if (!sort.some((s) => s.field === k.field)) {
          sort.push(k);
        }
      }
      continue;
    }

    if (key.startsWith('sort')) {
      problems.push(item(`unsupported sort parameter '${key}'; use sort=<field> or sort=-<field>`, shown));
      continue;
    }

    const m = BRACKETED.exec(key);
    const kind = m?.[1];
    const inner = m?.[2] ?? '';

    if (key.startsWith('filter')) {
      if (kind !== 'filter' || inner === '') {
        problems.push(
          item(`unsupported filter parameter '${key}'; use filter[<field>]=<value>[,<value>...]`, shown),
        );
        continue;
      }
      const names = inner === '*' ? [...spec.filterable] : inner.split('|').map((f) => f.trim());
      const unknown = names.filter((f) => !spec.filterable.includes(f));
      if (names.length === 0) {
        problems.push(item(`unsupported filter parameter '${key}'; this list cannot be filtered`, shown));
        continue;
      }
      if (unknown.length > 0) {
        for (const f of unknown) {
          problems.push(
            item(
              spec.filterable.length > 0
                ? `unsupported filter field '${f}'; filterable fields: ${listOf(spec.filterable)}`
                : `unsupported filter field '${f}'; this list cannot be filtered`,
              shown,
            ),
          );
        }
        continue;
      }
      const values = splitList(value);
      if (names.every((f) => spec.timeFields?.includes(f))) {
        const bad = values.filter((v) => !isTimeFilterValue(v));
        if (bad.length > 0) {
          problems.push(
            item(`filter[${inner}]: '${bad.join("', '")}' is not a time; ${TIME_FILTER_HINT}`, shown),
          );
          continue;
        }
      }
      filters.push({ fields: [...new Set(names)], values });
      continue;
    }

    if (key.startsWith('fields')) {
      if (kind !== 'fields' || inner === '') {
        problems.push(item(`unsupported fields parameter '${key}'; use fields[${spec.resource}]=a,b`, shown));
        continue;
      }
      if (inner !== spec.resource) {
        problems.push(item(`unsupported resource in fields[${inner}]; use fields[${spec.resource}]`, shown));
        continue;
      }
      const requested = value
        .split(',')
        .map((f) => f.trim())
        .filter((f) => f !== '');
      if (requested.length === 0) {
        problems.push(item(`fields[${spec.resource}] must list at least one field`, shown));
        continue;
      }
      let ok = true;
      for (const f of requested) {
        if (!spec.fields.includes(f)) {
          ok = false;
          problems.push(
            item(
              `unsupported field '${f}' in fields[${spec.resource}]; fields: ${listOf(spec.fields)}`,
              shown,
            ),
          );
        }
      }
      if (ok) {
        fields ??= [];
        for (const f of requested) if (!fields.includes(f)) fields.push(f);
      }
      continue;
    }

    // page...
    if (kind !== 'page' || (inner !== 'limit' && inner !== 'offset')) {
      problems.push(item(`unsupported page parameter '${key}'; use page[limit] and page[offset]`, shown));
      continue;
    }
    if (!spec.pagination) {
      problems.push(item(`this list is not paginated; remove ${key}`, shown));
      continue;
    }
    if (seenPage.has(inner)) {
      problems.push(item(`${key} is given more than once`, shown));
      continue;
    }
    seenPage.add(inner);
    if (inner === 'limit') limitRaw = value;
    else offsetRaw = value;
  }

  const terms = filters.reduce((sum, f) => sum + f.fields.length * f.values.length, 0);
  if (terms > MAX_FILTER_TERMS) {
    problems.push(
      item(
        `the filters compare ${terms} field-value pairs; at most ${MAX_FILTER_TERMS} are allowed`,
        'use fewer values or fields per filter (filter[*] counts every filterable field)',
      ),
    );
  }

  let page: ListPage | undefined;
  if (spec.pagination) {
    const { defaultLimit, maxLimit } = spec.pagination;
    page = { limit: defaultLimit, offset: 0 };
    if (limitRaw !== undefined) {
      const t = limitRaw.trim();
      const n = INTEGER.test(t) ? Number(t) : NaN;
      if (!Number.isSafeInteger(n) || n < 1 || n > maxLimit) {
        problems.push(
          item(
            INTEGER.test(t)
              ? `page[limit] must be between 1 and ${maxLimit}`
              : `page[limit] must be an integer between 1 and ${maxLimit}`,
            `page[limit]=${limitRaw}`,
          ),
        );
      } else {
        page.limit = n;
      }
    }
    if (offsetRaw !== undefined) {
      const t = offsetRaw.trim();
      const n = INTEGER.test(t) ? Number(t) : NaN;
      if (!Number.isSafeInteger(n)) {
        problems.push(item('page[offset] must be an integer of 0 or more', `page[offset]=${offsetRaw}`));
      } else {
        page.offset = n;
      }
    }
  }

  if (problems.length > 0) throw invalidQuery(problems);

  if (sort.length === 0) {
    const { keys } = parseSortKeys(spec.defaultSort);
    for (const k of keys) if (!sort.some((s) => s.field === k.field)) sort.push(k);
  }
  if (fields === undefined && spec.defaultFields) fields = [...spec.defaultFields];

  const result: ListQuery = { sort, filters };
  if (fields !== undefined) result.fields = fields;
  if (page !== undefined) result.page = page;
  return result;
}

// ---------------------------------------------------------------------------------------------------------------
// Matching

/**
 * Compiles a case-insensitive glob where `*` matches any run of characters (also none) and every other
 * character is literal. Runs in O(text × pattern) at worst: each literal segment is searched for once, left to
 * right, without backtracking — the leftmost match of every middle segment is always a valid choice.
 */
export function compileWildcard(pattern: string): (text: string) => boolean {
  const matches = compileLowerCaseWildcard(pattern);
  return (text) => matches(foldCase(text));
}

/**
 * Lower case for comparing without case. `toLowerCase()` alone is not enough: it turns a capital sigma at the end
 * of a word into the final form ς and elsewhere into σ, so 'ΑΣ' and 'ασ' would differ.
 */
export function foldCase(text: string): string {
  const lower = text.toLowerCase();
  return lower.includes('ς') ? lower.replaceAll('ς', 'σ') : lower;
}

/**
 * `compileWildcard` for text the caller has already folded (with `foldCase()`), so that text matched against many
 * patterns is folded once.
 */
export function compileLowerCaseWildcard(pattern: string): (lowerText: string) => boolean {
  const p = foldCase(pattern);
  if (!p.includes('*')) return (t) => t === p;
  const segments = p.split('*');
  const head = segments[0] ?? '';
  const tail = segments[segments.length - 1] ?? '';
  const middle = segments.slice(1, -1).filter((s) => s !== '');
  if (middle.length === 0 && head === '' && tail === '') return () => true;
  return (t) => {
    if (t.length < head.length + tail.length) return false;
    if (!t.startsWith(head) || !t.endsWith(tail)) return false;
    let pos = head.length;
    const end = t.length - tail.length;
    for (const seg of middle) {
      const at = t.indexOf(seg, pos);
      if (at < 0 || at + seg.length > end) return false;
      pos = at + seg.length;
    }
    return true;
  };
}

/** `key:value`, `key : value` → `key: value` (first colon only; values may contain colons). */
const normalizeLabel = (s: string): string => {
  const at = s.indexOf(':');
  return at < 0 ? s : `${s.slice(0, at).trimEnd()}: ${s.slice(at + 1).trimStart()}`;
};

interface ValueMatcher {
  empty: boolean;
  plain: (text: string) => boolean;
  label: (text: string) => boolean;
}

const compileValue = (value: string): ValueMatcher => {
  const plain = compileWildcard(value);
  const normalized = normalizeLabel(value);
  return { empty: value === '', plain, label: normalized === value ? plain : compileWildcard(normalized) };
};

const isEmptyValue = (v: unknown): boolean =>
  v === null ||
  v === undefined ||
  v === '' ||
  (Array.isArray(v) && v.length === 0) ||
  (typeof v === 'object' && !(v instanceof Date) && Object.keys(v).length === 0);

const scalarText = (v: unknown): string | undefined => {
  switch (typeof v) {
    case 'string':
      return v;
    case 'number':
    case 'bigint':
    case 'boolean':
      return String(v);
    default:
      if (v instanceof Date) return v.toISOString();
      return undefined;
  }
};

const labelText = (key: string, v: unknown): string => {
  if (v === null || v === undefined) return `${key}: `;
  const text = scalarText(v);
  return `${key}: ${text ?? JSON.stringify(v)}`;
};

const matchesValue = (v: unknown, m: ValueMatcher): boolean => {
  if (m.empty && isEmptyValue(v)) return true;
  if (v === null || v === undefined) return false;
  const text = scalarText(v);
  if (text !== undefined) return m.plain(text);
  if (Array.isArray(v)) return v.some((el: unknown) => matchesValue(el, m));
  if (typeof v === 'object') {
    return Object.entries(v as Record<string, unknown>).some(([k, val]) => m.label(labelText(k, val)));
  }
  return false;
};

// ---------------------------------------------------------------------------------------------------------------
// Sorting

const typeRank = (v: unknown): number => {
  switch (typeof v) {
    case 'boolean':
      return 0;
    case 'number':
    case 'bigint':
      return 1;
    case 'string':
      return 2;
    default:
      return v instanceof Date ? 1 : 3;
  }
};

const codeUnitCompare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Compares two non-null values: numbers numerically, strings case-insensitively (then case-sensitively). */
const compareValues = (a: unknown, b: unknown): number => {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra - rb;
  if (typeof a === 'string' && typeof b === 'string') {
    return codeUnitCompare(a.toLowerCase(), b.toLowerCase()) || codeUnitCompare(a, b);
  }
  if (ra === 1) {
    const na = a instanceof Date ? a.getTime() : (a as number | bigint);
    const nb = b instanceof Date ? b.getTime() : (b as number | bigint);
    return na < nb ? -1 : na > nb ? 1 : 0;
  }
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  const ja = JSON.stringify(a) ?? '';
  const jb = JSON.stringify(b) ?? '';
  return codeUnitCompare(ja.toLowerCase(), jb.toLowerCase()) || codeUnitCompare(ja, jb);
};

// ---------------------------------------------------------------------------------------------------------------
// Applying

/** Keeps only `fields` (in that order) of `item`; returns a shallow copy of the whole item when `fields` is absent. */
export function pickFields<T extends object>(item: T, fields?: readonly string[]): Partial<T> {
  if (fields === undefined) return { ...item };
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    if (Object.prototype.hasOwnProperty.call(item, f)) out[f] = (item as Record<string, unknown>)[f];
  }
  return out as Partial<T>;
}

const defaultAccessor = (item: object, field: string): unknown =>
  Object.prototype.hasOwnProperty.call(item, field) ? (item as Record<string, unknown>)[field] : undefined;

/**
 * Runs a list query over an in-memory list: filter, stable sort (null/undefined last in both directions), count
 * (after filtering, before pagination), pagination, then sparse fields. `accessor` reads a field's value for
 * filtering and sorting (default: the item's own property of that name); sparse fields pick own properties.
 */
export function applyListQuery<T extends object>(
  items: readonly T[],
  query: ListQuery,
  accessor: (item: T, field: string) => unknown = defaultAccessor,
): { data: Partial<T>[]; count: number } {
  const filters = query.filters.map((f) => ({ fields: f.fields, matchers: f.values.map(compileValue) }));
  const kept =
    filters.length === 0
      ? [...items]
      : items.filter((it) =>
          filters.every((f) =>
            f.fields.some((field) => {
              const v = accessor(it, field);
              return f.matchers.some((m) => matchesValue(v, m));
            }),
          ),
        );

  const sorted =
    query.sort.length === 0
      ? kept
      : kept
          .map((it) => ({ it, keys: query.sort.map((s) => accessor(it, s.field)) }))
          .sort((x, y) => {
            for (let i = 0; i < query.sort.length; i++) {
              const a = x.keys[i];
              const b = y.keys[i];
              const aNull = a === null || a === undefined;
              const bNull = b === null || b === undefined;
              if (aNull || bNull) {
                if (aNull && bNull) continue;
                return aNull ? 1 : -1;
              }
              const c = compareValues(a, b);
              if (c !== 0) return query.sort[i]?.direction === 'desc' ? -c : c;
            }
            return 0;
          })
          .map((e) => e.it);

  const count = sorted.length;
  const paged = query.page ? sorted.slice(query.page.offset, query.page.offset + query.page.limit) : sorted;
  return { data: paged.map((it) => pickFields(it, query.fields)), count };
}
