import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { ListQuery } from '@svc/protocol';
import type { AuditRange } from '../core/audit/ports.js';
import { textEqualityValue } from './list-query-sql.js';
import type { StorageSchema } from './schema.js';

/** The columns counted per value (the API field of each is its column name). */
export const COUNTED_COLUMNS = ['username', 'action', 'client_id', 'outcome', 'application'] as const;
export type CountedColumn = (typeof COUNTED_COLUMNS)[number];

/** The `field` of the row counting every record (its `value` is ''). */
const TOTAL = '*';

const isCounted = (field: string): field is CountedColumn =>
  (COUNTED_COLUMNS as readonly string[]).includes(field);

/** The counted columns of one inserted row, as stored. */
export type CountedRow = Readonly<Record<CountedColumn, string>>;

/**
 * Rows per upsert statement: powers of two, so that a few statement texts serve every batch (SQLite keeps
 * prepared statements per text) and a batch takes at most one statement per size below the largest.
 */
const CHUNKS = [256, 128, 64, 32, 16, 8, 4, 2, 1] as const;

/**
 * The `audit_counts` counters (migration 030_audit_counts, SQLite): how many records hold each value of the
 * counted columns, compared as the list filter compares (`lower(column) = value`), and the total. The key of a value
 * is computed by the database's own lower() on the value as stored, when inserting and when purging, so a counter
 * is exactly the count(*) of its equality filter. Every method runs inside the caller's transaction.
 */
export class AuditCounts {
  /** Adds the rows of one insert (in the transaction that inserted them). */
  async added(trx: Kysely<StorageSchema>, rows: readonly CountedRow[]): Promise<void> {
    // Grouped by the value as stored; values that lower() makes equal meet in the upsert.
    const deltas = new Map<string, { field: string; value: string; n: number }>();
    const bump = (field: string, value: string) => {
      const key = `${field}\u0000${value}`;
      const entry = deltas.get(key);
      if (entry) entry.n++;
      else deltas.set(key, { field, value, n: 1 });
    };
    for (const row of rows) for (const column of COUNTED_COLUMNS) bump(column, row[column]);
    if (rows.length > 0) deltas.set(TOTAL, { field: TOTAL, value: '', n: rows.length });
    const all = [...deltas.values()];
    let at = 0;
    for (const size of CHUNKS) {
      while (all.length - at >= size) {
        const chunk = all.slice(at, at + size);
        at += size;
        const values = chunk.map((d) => sql`(${d.field}, lower(${d.value}), ${d.n})`);
        await sql`insert into audit_counts (field, value, n) values ${sql.join(values)}
          on conflict (field, value) do update set n = n + excluded.n`.execute(trx);
      }
    }
  }

  /**
   * Subtracts the records older than `cutoffMs` (in the transaction that deletes them, before the delete): the
   * first statement writes, so the transaction holds the write lock from its start.
   */
  async purging(trx: Kysely<StorageSchema>, cutoffMs: number): Promise<void> {
    const perValue: RawBuilder<unknown>[] = COUNTED_COLUMNS.map((column) => {
      const ref = sql.ref(column);
      return sql`select ${column} as field, lower(${ref}) as value, count(*) as n from audit_log
        where timestamp < ${cutoffMs} group by lower(${ref})`;
    });
    const total = sql`select ${TOTAL} as field, '' as value, count(*) as n from audit_log where timestamp < ${cutoffMs}`;
    // `where true`: SQLite's INSERT … SELECT with an upsert clause needs a WHERE to parse unambiguously.
    await sql`insert into audit_counts (field, value, n)
      select field, value, -n from (${sql.join([...perValue, total], sql` union all `)}) where true
      on conflict (field, value) do update set n = n + excluded.n`.execute(trx);
    await sql`delete from audit_counts where n = 0`.execute(trx);
  }

  /**
   * The exact count of records matching the query's filters, when the counters hold it: no time range, and no
   * filter or one filter on one counted column whose values are all equalities. Otherwise undefined.
   */
  async countOf(db: Kysely<StorageSchema>, query: ListQuery, range: AuditRange): Promise<number | undefined> {
    if (range.since !== undefined || range.until !== undefined) return undefined;
    const keys = this.keysOf(query);
    if (keys === undefined) return undefined;
    const row = await db
      .selectFrom('audit_counts')
      .select(sql<number | bigint | null>`sum(n)`.as('n'))
      .where('field', '=', keys.field)
      .where('value', 'in', keys.values)
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /** The counter keys whose sum answers the query, if any (distinct values: `a,A` is one value). */
  keysOf(query: ListQuery): { field: string; values: string[] } | undefined {
    if (query.filters.length === 0) return { field: TOTAL, values: [''] };
    const [filter] = query.filters;
    if (query.filters.length > 1 || filter === undefined || filter.fields.length !== 1) return undefined;
    const [field] = filter.fields;
    if (field === undefined || !isCounted(field)) return undefined;
    const values = new Set<string>();
    for (const value of filter.values) {
      const equal = textEqualityValue(value);
      if (equal === undefined) return undefined;
      values.add(equal);
    }
    return values.size > 0 ? { field, values: [...values] } : undefined;
  }
}
