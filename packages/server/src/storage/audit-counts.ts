import { sql, type Kysely } from 'kysely';
import type { ListQuery } from '@svc/protocol';
import type { AuditRange } from '../core/audit/ports.js';
import { textEqualityValue } from './list-query-sql.js';
import type { StorageSchema } from './schema.js';

/** The columns counted per value and per pair of values (the API field of each is its column name). */
export const COUNTED_COLUMNS = ['username', 'action', 'client_id', 'outcome', 'application'] as const;
export type CountedColumn = (typeof COUNTED_COLUMNS)[number];

/** The counted rows of one insert: the counted columns as stored. */
export type CountedRow = Readonly<Record<CountedColumn, string>>;

/** What one counter counts: every record (no column), a column's values, or a pair of columns' values. */
type CountKey = readonly [] | readonly [CountedColumn] | readonly [CountedColumn, CountedColumn];

const COUNT_KEYS: readonly CountKey[] = [
  [],
  ...COUNTED_COLUMNS.map((c): CountKey => [c]),
  ...COUNTED_COLUMNS.flatMap((a, i) => COUNTED_COLUMNS.slice(i + 1).map((b): CountKey => [a, b])),
];

/** The `field` of a key's rows: '*', `action` or `username,action` (columns in COUNTED_COLUMNS order). */
const fieldOf = (key: CountKey): string => (key.length === 0 ? '*' : key.join(','));

const isCounted = (field: string): field is CountedColumn =>
  (COUNTED_COLUMNS as readonly string[]).includes(field);

/**
 * Rows per upsert statement: powers of two, so that a few statement texts serve every batch (SQLite keeps
 * prepared statements per text) and a batch takes at most one statement per size below the largest.
 */
const CHUNKS = [256, 128, 64, 32, 16, 8, 4, 2, 1] as const;

interface Delta {
  field: string;
  value: string;
  value2: string;
  n: number;
}

/** Counts of the rows per key and raw value(s), without joining values into strings (any character may occur). */
function deltasOf(rows: readonly CountedRow[]): Delta[] {
  const out: Delta[] = [];
  for (const key of COUNT_KEYS) {
    const field = fieldOf(key);
    const [a, b] = key;
    if (a === undefined) {
      out.push({ field, value: '', value2: '', n: rows.length });
      continue;
    }
    const byValue = new Map<string, Map<string, Delta>>();
    for (const row of rows) {
      const value = row[a];
      const value2 = b === undefined ? '' : row[b];
      let inner = byValue.get(value);
      if (!inner) byValue.set(value, (inner = new Map<string, Delta>()));
      const delta = inner.get(value2);
      if (delta) delta.n++;
      else {
        const created = { field, value, value2, n: 1 };
        inner.set(value2, created);
        out.push(created);
      }
    }
  }
  return out;
}

/**
 * The `audit_counts` counters (migration 030_audit_counts, SQLite): how many records hold each value of a counted
 * column, and each pair of values of two of them, compared as the list filter compares (`lower(column) = value`),
 * and the total. A key is computed by the database's own lower() on the value as stored, when inserting and when
 * purging, so a counter is exactly the count(*) of its equality filters. Every method runs inside the caller's
 * transaction.
 */
export class AuditCounts {
  /** Adds the rows of one insert (in the transaction that inserted them). */
  async added(trx: Kysely<StorageSchema>, rows: readonly CountedRow[]): Promise<void> {
    if (rows.length === 0) return;
    // Grouped by the values as stored; values that lower() makes equal meet in the upsert.
    const all = deltasOf(rows);
    let at = 0;
    for (const size of CHUNKS) {
      while (all.length - at >= size) {
        const chunk = all.slice(at, at + size);
        at += size;
        const values = chunk.map((d) => sql`(${d.field}, lower(${d.value}), lower(${d.value2}), ${d.n})`);
        await sql`insert into audit_counts (field, value, value2, n) values ${sql.join(values)}
          on conflict (field, value, value2) do update set n = n + excluded.n`.execute(trx);
      }
    }
  }

  /**
   * Subtracts the records older than `cutoffMs` (in the transaction that deletes them, before the delete): the
   * first statement writes, so the transaction holds the write lock from its start.
   */
  async purging(trx: Kysely<StorageSchema>, cutoffMs: number): Promise<void> {
    const selects = COUNT_KEYS.map((key) => {
      const lowered = key.map((c) => sql`lower(${sql.ref(c)})`);
      const [first = sql`''`, second = sql`''`] = lowered;
      const grouped = lowered.length > 0 ? sql` group by ${sql.join(lowered)}` : sql``;
      return sql`select ${fieldOf(key)} as field, ${first} as value, ${second} as value2, count(*) as n
        from audit_log where ${sql.ref('timestamp')} < ${cutoffMs}${grouped}`;
    });
    // `where true`: SQLite's INSERT … SELECT with an upsert clause needs a WHERE to parse unambiguously.
    await sql`insert into audit_counts (field, value, value2, n)
      select field, value, value2, -n from (${sql.join(selects, sql` union all `)}) where true
      on conflict (field, value, value2) do update set n = n + excluded.n`.execute(trx);
    await sql`delete from audit_counts where n = 0`.execute(trx);
  }

  /**
   * The exact count of records matching the query's filters, when the counters hold it: no time range, and no
   * filter, or one or two filters each on one counted column (two different ones) whose values are all
   * equalities. Otherwise undefined.
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
      .where('value2', 'in', keys.values2)
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /**
   * The counter rows whose sum answers the query, if any: each combination of the distinct values (`a,A` is one
   * value) matches a disjoint set of records.
   */
  keysOf(query: ListQuery): { field: string; values: string[]; values2: string[] } | undefined {
    const terms: { column: CountedColumn; values: string[] }[] = [];
    for (const filter of query.filters) {
      const [field, ...more] = filter.fields;
      if (field === undefined || more.length > 0 || !isCounted(field)) return undefined;
      const values = new Set<string>();
      for (const value of filter.values) {
        const equal = textEqualityValue(value);
        if (equal === undefined) return undefined;
        values.add(equal);
      }
      if (values.size === 0) return undefined;
      terms.push({ column: field, values: [...values] });
    }
    if (terms.length > 2) return undefined;
    terms.sort((x, y) => COUNTED_COLUMNS.indexOf(x.column) - COUNTED_COLUMNS.indexOf(y.column));
    const [first, second] = terms;
    if (first && second && first.column === second.column) return undefined;
    const key = terms.map((t) => t.column) as unknown as CountKey;
    return {
      field: fieldOf(key),
      values: first?.values ?? [''],
      values2: second?.values ?? [''],
    };
  }
}
