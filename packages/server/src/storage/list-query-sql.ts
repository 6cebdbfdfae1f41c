/**
 * Applies a parsed `ListQuery` (see @svc/protocol list-query) to a Kysely select, for SQL-backed lists.
 * Works the same on SQLite, PostgreSQL and MySQL/MariaDB:
 *
 * - filters: one WHERE term per filter (AND), OR across its fields and values. Text columns compare
 *   `lower(col)` with the lower-cased value (`=`), or with `LIKE … ESCAPE '\'` when the value has a `*`
 *   (`*` → `%`; `%`, `_` and `\` in the value are escaped so they match literally). `*` alone means "not null";
 *   an empty value matches NULL and ''. Numeric columns match numbers exactly; other values match nothing.
 *   Time columns (epoch milliseconds) match the period a value names (`2024-05-01` = that UTC day, see
 *   time-filter.ts in @svc/protocol) with `col >= from and col < to`, so an index on the column serves them.
 *   Caveat: SQLite's lower() folds ASCII letters only.
 * - sort: NULLs last in both directions (`col IS NULL` first, portable to MySQL which lacks NULLS LAST); text
 *   columns order by `lower(col)` then `col`. An optional tie-breaker column makes pagination deterministic.
 * - page: LIMIT/OFFSET. The count (after filtering, before pagination) comes from `countSqlList`, or from the
 *   caller's cheaper exact count (`SqlListOptions.count`) when it has one.
 *
 * Sparse fieldsets are not applied here: map rows to API objects, then use `pickFields` from @svc/protocol.
 */
import { sql } from 'kysely';
import type { Expression, SelectQueryBuilder, SqlBool } from 'kysely';
import {
  parseTimePeriod,
  type ListFilter,
  type ListPage,
  type ListQuery,
  type ListSort,
} from '@svc/protocol';

/** An SQL column an API field maps to. `type` defaults to `text`; `time` is epoch milliseconds. */
export interface SqlColumn {
  column: string;
  type?: 'text' | 'number' | 'time';
  /** A NOT NULL column sorts without the `col IS NULL` key, so an index on it can serve the ORDER BY. */
  notNull?: boolean;
}

/** `{ apiField: 'sql_column' }` or `{ apiField: { column, type } }`; columns may be qualified (`t.col`). */
export type SqlColumnMap = Readonly<Record<string, string | SqlColumn>>;

export interface SqlListOptions {
  /** Column appended as the last ascending sort key (unless already sorted on), e.g. the primary key. */
  tieBreaker?: string;
  /**
   * An exact count of the filtered rows obtained more cheaply than count(*) (e.g. from maintained counters), or
   * undefined when it cannot answer this query; then count(*) runs.
   */
  count?: () => Promise<number | undefined>;
}

const resolveColumn = (columns: SqlColumnMap, field: string): Required<SqlColumn> => {
  const entry = Object.prototype.hasOwnProperty.call(columns, field) ? columns[field] : undefined;
  if (entry === undefined) throw new Error(`list query: no SQL column mapped for field '${field}'`);
  return typeof entry === 'string'
    ? { column: entry, type: 'text', notNull: false }
    : { column: entry.column, type: entry.type ?? 'text', notNull: entry.notNull ?? false };
};

/** Escapes LIKE metacharacters (escape character `\`), then turns the wildcard `*` into `%`. */
export const likePattern = (value: string): string => value.replace(/[\\%_]/g, '\\$&').replace(/\*/g, '%');

const NUMBER = /^-?\d+(?:\.\d+)?$/;
const FALSE = sql<SqlBool>`1 = 0`;

/**
 * The value a text column's `lower(col)` is compared with by `=` for this filter value, or undefined when the
 * value is empty or has a wildcard (then it is not an equality). The one place that decides it, for the WHERE
 * terms below and for anything that answers counts of equality filters without them.
 */
export const textEqualityValue = (value: string): string | undefined =>
  value === '' || value.includes('*') ? undefined : value.toLowerCase();

const valuePredicate = (col: Required<SqlColumn>, value: string): Expression<SqlBool> => {
  const ref = sql.ref(col.column);
  if (value === '') {
    return col.type === 'text' ? sql<SqlBool>`(${ref} is null or ${ref} = '')` : sql<SqlBool>`${ref} is null`;
  }
  if (value.replace(/\*/g, '') === '') return sql<SqlBool>`${ref} is not null`;
  if (col.type === 'number') {
    return NUMBER.test(value.trim()) ? sql<SqlBool>`${ref} = ${Number(value.trim())}` : FALSE;
  }
  if (col.type === 'time') {
    const period = parseTimePeriod(value);
    return period ? sql<SqlBool>`(${ref} >= ${period.fromMs} and ${ref} < ${period.toMs})` : FALSE;
  }
  const equal = textEqualityValue(value);
  if (equal !== undefined) return sql<SqlBool>`lower(${ref}) = ${equal}`;
  // sql.lit lets each dialect write the backslash literal its own way (MySQL doubles it).
  return sql<SqlBool>`lower(${ref}) like ${likePattern(value.toLowerCase())} escape ${sql.lit('\\')}`;
};

const filterPredicate = (filter: ListFilter, columns: SqlColumnMap): Expression<SqlBool> => {
  const terms: Expression<SqlBool>[] = [];
  for (const field of filter.fields) {
    const col = resolveColumn(columns, field);
    for (const value of filter.values) terms.push(valuePredicate(col, value));
  }
  if (terms.length === 0) return FALSE;
  if (terms.length === 1) return terms[0] as Expression<SqlBool>;
  return sql<SqlBool>`(${sql.join(terms, sql` or `)})`;
};

/** Adds one WHERE term per filter (AND between filters, OR inside one). */
export function whereListFilters<DB, TB extends keyof DB, O>(
  qb: SelectQueryBuilder<DB, TB, O>,
  filters: readonly ListFilter[],
  columns: SqlColumnMap,
): SelectQueryBuilder<DB, TB, O> {
  let out = qb;
  for (const f of filters) out = out.where(filterPredicate(f, columns));
  return out;
}

/** Adds ORDER BY terms for the sort keys (NULLs last), then the tie-breaker column if given. */
export function orderByListSort<DB, TB extends keyof DB, O>(
  qb: SelectQueryBuilder<DB, TB, O>,
  sort: readonly ListSort[],
  columns: SqlColumnMap,
  tieBreaker?: string,
): SelectQueryBuilder<DB, TB, O> {
  let out = qb;
  const used = new Set<string>();
  for (const s of sort) {
    const col = resolveColumn(columns, s.field);
    used.add(col.column);
    const ref = sql.ref(col.column);
    if (!col.notNull) out = out.orderBy(sql`(${ref} is null)`, 'asc');
    if (col.type === 'text') out = out.orderBy(sql`lower(${ref})`, s.direction);
    out = out.orderBy(ref, s.direction);
  }
  if (tieBreaker !== undefined && !used.has(tieBreaker)) out = out.orderBy(sql.ref(tieBreaker), 'asc');
  return out;
}

/** Adds LIMIT/OFFSET when the list is paginated. */
export function paginateList<DB, TB extends keyof DB, O>(
  qb: SelectQueryBuilder<DB, TB, O>,
  page: ListPage | undefined,
): SelectQueryBuilder<DB, TB, O> {
  return page ? qb.limit(page.limit).offset(page.offset) : qb;
}

/** The select with filters, sort and pagination applied. */
export function buildSqlList<DB, TB extends keyof DB, O>(
  qb: SelectQueryBuilder<DB, TB, O>,
  query: ListQuery,
  columns: SqlColumnMap,
  options: SqlListOptions = {},
): SelectQueryBuilder<DB, TB, O> {
  return paginateList(
    orderByListSort(whereListFilters(qb, query.filters, columns), query.sort, columns, options.tieBreaker),
    query.page,
  );
}

/**
 * Counts the rows of `qb` ignoring its select list, ORDER BY, LIMIT and OFFSET. Pass the query with filters
 * applied (e.g. `whereListFilters(base, query.filters, columns)`); `qb` must not use GROUP BY or DISTINCT.
 */
export async function countSqlList<DB, TB extends keyof DB, O>(
  qb: SelectQueryBuilder<DB, TB, O>,
): Promise<number> {
  // Kysely cannot resolve the row type of a select over a generic DB, hence the annotation.
  const row = (await qb
    .clearSelect()
    .clearOrderBy()
    .clearLimit()
    .clearOffset()
    .select(sql<number | string | bigint>`count(*)`.as('count'))
    .executeTakeFirst()) as { count: number | string | bigint } | undefined;
  return row ? Number(row.count) : 0;
}

/**
 * Runs the list: the page of rows and the count after filtering, before pagination. The count query is skipped
 * when the page itself shows the total (a short, non-empty or first page).
 */
export async function executeSqlList<DB, TB extends keyof DB, O>(
  qb: SelectQueryBuilder<DB, TB, O>,
  query: ListQuery,
  columns: SqlColumnMap,
  options: SqlListOptions = {},
): Promise<{ rows: O[]; count: number }> {
  const filtered = whereListFilters(qb, query.filters, columns);
  const rows = await paginateList(
    orderByListSort(filtered, query.sort, columns, options.tieBreaker),
    query.page,
  ).execute();
  const page = query.page;
  if (!page) return { rows, count: rows.length };
  if (rows.length < page.limit && (rows.length > 0 || page.offset === 0)) {
    return { rows, count: page.offset + rows.length };
  }
  return { rows, count: (await options.count?.()) ?? (await countSqlList(filtered)) };
}
