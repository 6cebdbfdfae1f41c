import { parseListQuery, type AuditOutcome, type ListQuery } from '@svc/protocol';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_ENGINES, createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import { AUDIT_LIST } from '../../src/core/audit/audit-list.js';
import { AuditLog } from '../../src/core/audit/audit-log.js';
import { purgeAuditLog } from '../../src/core/audit/audit-retention.js';
import type { AuditRange, AuditRecord } from '../../src/core/audit/ports.js';
import { AuditCounts, COUNTED_COLUMNS, type CountedColumn } from '../../src/storage/audit-counts.js';
import { SqlAuditRepository } from '../../src/storage/audit-repository.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { countSqlList, whereListFilters, type SqlColumnMap } from '../../src/storage/list-query-sql.js';

const DAY = 86_400_000;
const NOW = new Date('2031-06-15T12:00:00.000Z');

/** Values that lower() folds (ASCII), that SQLite's lower() leaves alone (non-ASCII), LIKE metacharacters, '' and
 * one longer than the column (stored cut to 150 characters). */
const VALUES: Readonly<Record<CountedColumn, readonly string[]>> = {
  username: ['alice', 'Alice', 'ALICE', 'Éve', 'éve', 'ÉVE', 'bob_1', 'bob%1', 'x'.repeat(160)],
  action: ['create', 'Create', 'delete', 'execute.start', 'success'],
  client_id: ['web-1', 'WEB-1', '', 'db-1', 'ünï', 'ÜNÏ'],
  outcome: ['success', 'failure', 'refused'],
  application: ['vault', 'Vault', 'client.command'],
};

/** A deterministic spread of records over the 100 days before NOW. */
function records(count: number, seed: number): AuditRecord[] {
  let state = seed;
  const next = (n: number) => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return (state >>> 8) % n;
  };
  const pick = <T>(values: readonly T[]): T => values[next(values.length)] as T;
  return Array.from({ length: count }, (_, i) => ({
    timestamp: new Date(NOW.getTime() - next(100 * 24) * 3_600_000),
    username: pick(VALUES.username),
    remote_ip: '192.0.2.7',
    application: pick(VALUES.application),
    action: pick(VALUES.action),
    outcome: pick(VALUES.outcome) as AuditOutcome,
    affected_id: `jid-${seed}-${i}`,
    client_id: pick(VALUES.client_id),
    client_hostname: 'host.example',
    request: '{}',
    response: '{"status":200}',
  }));
}

/** Every filter value worth asking: as written, lower- and upper-cased, several at once, wildcards, empty. */
function queries(): Record<string, string>[] {
  const out: Record<string, string>[] = [{}];
  for (const [field, values] of Object.entries(VALUES)) {
    for (const value of values) {
      for (const v of new Set([value, value.toLowerCase(), value.toUpperCase()]))
        out.push({ [`filter[${field}]`]: v });
    }
    out.push({ [`filter[${field}]`]: values.join(',') });
    const first = values[0] ?? '';
    out.push({ [`filter[${field}]`]: `${first},${first.toUpperCase()}` });
    out.push({ [`filter[${field}]`]: `${first.slice(0, 2)}*` });
    out.push({ [`filter[${field}]`]: '' });
  }
  for (const [a, b] of [
    ['alice', 'create'],
    ['ALICE,éve', 'Create,delete'],
    ['ÉVE', 'success'],
    ['bob%1', 'x*'],
  ] as const) {
    out.push({ 'filter[username]': a, 'filter[action]': b });
    out.push({ 'filter[client_id]': 'web-1,ünï', 'filter[outcome]': 'refused', 'filter[username]': a });
    out.push({ 'filter[application]': 'vault', 'filter[client_id]': b });
  }
  out.push({ 'filter[username|client_id]': 'alice' });
  out.push({ 'filter[timestamp]': '2031-06' });
  return out.map((q) => ({ ...q, 'page[limit]': '1' }));
}

const TEXT: SqlColumnMap = Object.fromEntries(
  AUDIT_LIST.filterable.map((f) => [
    f,
    { column: f, type: f === 'timestamp' ? 'time' : 'text', notNull: true },
  ]),
);

interface Counter {
  field: string;
  value: string;
  value2: string;
  n: number | bigint;
}

const silent = { warn: () => undefined, info: () => undefined };

describe.each(ALL_ENGINES)('storage contract on %s: audit counts', (engine) => {
  let testDb: TestDatabase;
  let database: Database;
  let repo: SqlAuditRepository;

  beforeAll(async () => {
    testDb = await createTestDatabase(engine);
    database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
    repo = new SqlAuditRepository(database);
  });
  afterAll(async () => {
    await database?.close();
    await testDb?.drop();
  });

  /** count(*) over the table with the list's WHERE terms: the count the list must answer. */
  const realCount = async (query: ListQuery, range: AuditRange = {}) => {
    let base = database.db.selectFrom('audit_log');
    if (range.since) base = base.where('timestamp', '>=', range.since.getTime());
    if (range.until) base = base.where('timestamp', '<', range.until.getTime());
    return countSqlList(whereListFilters(base, query.filters, TEXT));
  };

  const expectExactCounts = async (step: string) => {
    const ranges: AuditRange[] = [{}, { since: new Date(NOW.getTime() - 20 * DAY) }];
    for (const range of ranges) {
      for (const raw of queries()) {
        const query = parseListQuery(raw, AUDIT_LIST);
        const listed = (await repo.list(query, range)).count;
        expect({ step, raw, range, count: listed }).toEqual({
          step,
          raw,
          range,
          count: await realCount(query, range),
        });
      }
    }
    if (engine !== 'sqlite') return;
    // The whole counter table, against a GROUP BY of the records per column and per pair of columns.
    const keys: string[][] = COUNTED_COLUMNS.map((c) => [c]);
    for (const [i, a] of COUNTED_COLUMNS.entries())
      for (const b of COUNTED_COLUMNS.slice(i + 1)) keys.push([a, b]);
    const counters = await database.db
      .selectFrom('audit_counts')
      .select(['field', 'value', 'value2', 'n'])
      .execute();
    const grouped = await sql<Counter>`${sql.join(
      [
        ...keys.map((k) => {
          const lowered = k.map((c) => sql`lower(${sql.ref(c)})`);
          return sql`select ${k.join(',')} as field, ${lowered[0]} as value, ${lowered[1] ?? sql`''`} as value2,
            count(*) as n from audit_log group by ${sql.join(lowered)}`;
        }),
        sql`select '*' as field, '' as value, '' as value2, count(*) as n from audit_log having count(*) > 0`,
      ],
      sql` union all `,
    )}`.execute(database.db);
    const key = (r: Counter) => JSON.stringify([r.field, r.value, r.value2]);
    const sorted = (rows: Counter[]) =>
      rows.map((r) => ({ ...r, n: Number(r.n) })).sort((a, b) => (key(a) < key(b) ? -1 : 1));
    expect({ step, counters: sorted(counters) }).toEqual({ step, counters: sorted(grouped.rows) });
  };

  it('the count of every filtered list equals count(*) through inserts and purges by retention', async () => {
    await expectExactCounts('empty');
    // Through the queue (batches of 7), then one append larger than an INSERT (500 rows).
    const log = new AuditLog({ repository: repo, log: silent, batchSize: 7, flushDelayMs: 1 });
    for (const r of records(60, 1)) log.record(r);
    await log.flush();
    await expectExactCounts('queued');
    await repo.append(records(1_200, 2));
    await expectExactCounts('appended');

    expect(await purgeAuditLog(repo, 60, { now: () => NOW })).toBeGreaterThan(0);
    await expectExactCounts('purged to 60 days');
    expect(await purgeAuditLog(repo, 60, { now: () => NOW })).toBe(0);
    await expectExactCounts('purged again, nothing older');
    await repo.append(records(300, 3));
    expect(await purgeAuditLog(repo, 5, { now: () => new Date(NOW.getTime() + 2 * DAY) })).toBeGreaterThan(0);
    await expectExactCounts('appended, purged to 5 days two days later');
    await purgeAuditLog(repo, 1, { now: () => new Date(NOW.getTime() + 400 * DAY) });
    expect((await repo.list(parseListQuery({}, AUDIT_LIST))).count).toBe(0);
    await expectExactCounts('purged all');
  });

  it('a failed append leaves neither records nor counts behind', async () => {
    const before = await realCount(parseListQuery({}, AUDIT_LIST));
    const bad = records(501, 4);
    // The first INSERT (500 rows) succeeds, the second breaks the NOT NULL constraint.
    (bad[500] as unknown as { request: null }).request = null;
    await expect(repo.append(bad)).rejects.toThrow();
    await expectExactCounts('failed append');
    expect(await realCount(parseListQuery({}, AUDIT_LIST))).toBe(before);
  });

  if (engine === 'sqlite')
    it('answers single equality filters without a time range from the counters', async () => {
      await repo.append(records(200, 6));
      const counts = new AuditCounts();
      const keys = (raw: Record<string, string>) => counts.keysOf(parseListQuery(raw, AUDIT_LIST));
      expect(keys({})).toEqual({ field: '*', values: [''], values2: [''] });
      expect(keys({ 'filter[action]': 'Delete' })).toEqual({
        field: 'action',
        values: ['delete'],
        values2: [''],
      });
      expect(keys({ 'filter[username]': 'Alice,alice,bob' })).toEqual({
        field: 'username',
        values: ['alice', 'bob'],
        values2: [''],
      });
      expect(keys({ 'filter[action]': 'Delete,create', 'filter[username]': 'Alice' })).toEqual({
        field: 'username,action',
        values: ['alice'],
        values2: ['delete', 'create'],
      });
      const notCounted: Record<string, string>[] = [
        { 'filter[action]': 'del*' },
        { 'filter[action]': '' },
        { 'filter[username|action]': 'x' },
        { 'filter[username]': 'a', 'filter[action]': 'b', 'filter[client_id]': 'c' },
        { 'filter[username]': ['a', 'b'] } as unknown as Record<string, string>,
        { 'filter[username]': 'a', 'filter[action]': 'b*' },
        { 'filter[affected_id]': 'jid-1' },
        { 'filter[timestamp]': '2031-06-15' },
      ];
      for (const raw of notCounted) {
        expect({ raw, keys: keys(raw) }).toEqual({ raw, keys: undefined });
      }
      const query = parseListQuery({ 'filter[action]': 'DELETE,delete,create' }, AUDIT_LIST);
      expect(await counts.countOf(database.db, query, { since: NOW })).toBeUndefined();
      const counted = await counts.countOf(database.db, query, {});
      expect(counted).toBeGreaterThan(0);
      expect(counted).toBe(await realCount(query));
      const pair = parseListQuery(
        { 'filter[username]': 'ALICE', 'filter[action]': 'create,delete' },
        AUDIT_LIST,
      );
      const pairCounted = await counts.countOf(database.db, pair, {});
      expect(pairCounted).toBeGreaterThan(0);
      expect(pairCounted).toBe(await realCount(pair));
    });

  if (engine === 'sqlite')
    it('migration 030 fills the counters from the records already there', async () => {
      await repo.append(records(500, 5));
      await sql`drop table audit_counts`.execute(database.db);
      await sql`delete from svcd_migrations where name = '030_audit_counts'`.execute(database.db);
      await database.close();
      database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
      repo = new SqlAuditRepository(database);
      await expectExactCounts('migrated');
    });
});
