import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { applyListQuery, MAX_FILTER_TERMS, parseListQuery } from '@svc/protocol';
import type { ListQuery, ListSpec } from '@svc/protocol';
import {
  buildSqlList,
  countSqlList,
  executeSqlList,
  likePattern,
  whereListFilters,
} from '../../src/storage/list-query-sql.js';
import type { SqlColumnMap } from '../../src/storage/list-query-sql.js';

interface ItemTable {
  item_id: string;
  display_name: string | null;
  os: string | null;
  cpus: number | null;
}

interface DB {
  items: ItemTable;
}

const rows: ItemTable[] = [
  { item_id: 'i01', display_name: 'web-01', os: 'Linux', cpus: 4 },
  { item_id: 'i02', display_name: 'Web-02', os: 'linux', cpus: 16 },
  { item_id: 'i03', display_name: 'db.1+(x)', os: 'Windows', cpus: 2 },
  { item_id: 'i04', display_name: 'db11', os: 'Windows Server', cpus: null },
  { item_id: 'i05', display_name: null, os: null, cpus: 4 },
  { item_id: 'i06', display_name: '100%', os: '', cpus: 8 },
  { item_id: 'i07', display_name: '100x', os: 'a_b', cpus: 8 },
  { item_id: 'i08', display_name: 'back\\slash', os: 'aXb', cpus: 1 },
  { item_id: 'i09', display_name: 'backXslash', os: "o'neil", cpus: 1 },
];

const spec: ListSpec = {
  resource: 'items',
  sortable: ['id', 'name', 'os', 'cpus'],
  defaultSort: 'name',
  filterable: ['id', 'name', 'os', 'cpus'],
  fields: ['id', 'name', 'os', 'cpus'],
  pagination: { defaultLimit: 3, maxLimit: 100 },
};

const columns: SqlColumnMap = {
  id: 'item_id',
  name: 'display_name',
  os: 'items.os',
  cpus: { column: 'cpus', type: 'number' },
};

/** API-shaped view of the rows, for comparing with the in-memory implementation. */
const apiItems = rows.map((r) => ({ id: r.item_id, name: r.display_name, os: r.os, cpus: r.cpus }));

let dir: string;
let db: Kysely<DB>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-list-query-'));
  db = new Kysely<DB>({ dialect: new SqliteDialect({ database: new Database(join(dir, 'test.db')) }) });
  await db.schema
    .createTable('items')
    .addColumn('item_id', 'text', (c) => c.primaryKey())
    .addColumn('display_name', 'text')
    .addColumn('os', 'text')
    .addColumn('cpus', 'integer')
    .execute();
  await db.insertInto('items').values(rows).execute();
});

afterAll(async () => {
  await db.destroy();
  rmSync(dir, { recursive: true, force: true });
});

const base = () => db.selectFrom('items').selectAll();

const list = async (q: Record<string, string | string[]>) => {
  const query = parseListQuery(q, spec);
  return executeSqlList(base(), query, columns, { tieBreaker: 'item_id' });
};

const ids = async (q: Record<string, string | string[]>) => (await list(q)).rows.map((r) => r.item_id);

const allIds = (q: Record<string, string | string[]>) => ids({ ...q, 'page[limit]': '100' });

describe('likePattern', () => {
  test('escapes LIKE metacharacters and turns * into %', () => {
    expect(likePattern('a%b_c\\d*')).toBe('a\\%b\\_c\\\\d%');
    expect(likePattern('*')).toBe('%');
  });
});

describe('list query on SQLite', () => {
  test('default sort is case-insensitive with nulls last, paginated by default', async () => {
    expect(await allIds({})).toEqual(['i06', 'i07', 'i08', 'i09', 'i03', 'i04', 'i01', 'i02', 'i05']);
    const first = await list({});
    expect(first.rows.map((r) => r.item_id)).toEqual(['i06', 'i07', 'i08']);
    expect(first.count).toBe(9);
  });

  test('filters up to MAX_FILTER_TERMS field-value pairs run on SQLite; one more is a 400, not a 500', async () => {
    const values = (n: number) => ['i01', ...Array.from({ length: n - 1 }, (_, i) => `none-${i}`)].join(',');
    expect(MAX_FILTER_TERMS).toBe(500);
    expect(await allIds({ 'filter[id]': values(500) })).toEqual(['i01']);
    expect(await allIds({ 'filter[*]': values(125) })).toEqual(['i01']);
    // Repeated parameters AND together: 500 of them are as deep a WHERE as SQLite takes here.
    expect(await allIds({ 'filter[id]': Array.from({ length: 500 }, () => 'i0*') })).toHaveLength(9);
    for (const q of [
      { 'filter[id]': values(501) },
      { 'filter[*]': values(126) },
      { 'filter[id]': Array.from({ length: 501 }, () => 'i0*') },
    ]) {
      let thrown: unknown;
      try {
        parseListQuery(q, spec);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toMatchObject({ kind: 'invalid', code: 'ERR_INVALID_QUERY' });
      expect((thrown as Error).message).toContain('at most 500');
    }
  });

  test('asc, desc and tie-breaks', async () => {
    expect(await allIds({ sort: 'cpus' })).toEqual([
      'i08',
      'i09',
      'i03',
      'i01',
      'i05',
      'i06',
      'i07',
      'i02',
      'i04',
    ]);
    expect(await allIds({ sort: '-cpus' })).toEqual([
      'i02',
      'i06',
      'i07',
      'i01',
      'i05',
      'i03',
      'i08',
      'i09',
      'i04',
    ]);
    expect(await allIds({ sort: ['cpus', '-id'] })).toEqual([
      'i09',
      'i08',
      'i03',
      'i05',
      'i01',
      'i07',
      'i06',
      'i02',
      'i04',
    ]);
    expect(await allIds({ sort: '-name' })).toEqual([
      'i02',
      'i01',
      'i04',
      'i03',
      'i09',
      'i08',
      'i07',
      'i06',
      'i05',
    ]);
  });

  test('equality is case-insensitive', async () => {
    expect(await allIds({ 'filter[os]': 'LINUX' })).toEqual(['i01', 'i02']);
    expect(await allIds({ 'filter[name]': 'WEB-02' })).toEqual(['i02']);
  });

  test('comma OR, AND across filters, a|b across columns', async () => {
    expect(await allIds({ 'filter[id]': 'i01,i03' })).toEqual(['i03', 'i01']);
    expect(await allIds({ 'filter[os]': 'linux', 'filter[cpus]': '4' })).toEqual(['i01']);
    expect(await allIds({ 'filter[name|os]': 'windows*' })).toEqual(['i03', 'i04']);
    expect(await allIds({ 'filter[name|os]': 'db11,linux' })).toEqual(['i04', 'i01', 'i02']);
  });

  test('wildcards: prefix, suffix, contained, alone', async () => {
    expect(await allIds({ 'filter[name]': 'web*' })).toEqual(['i01', 'i02']);
    expect(await allIds({ 'filter[name]': '*1' })).toEqual(['i04', 'i01']);
    expect(await allIds({ 'filter[name]': '*b1*' })).toEqual(['i04']);
    expect(await allIds({ 'filter[name]': '*' })).toEqual([
      'i06',
      'i07',
      'i08',
      'i09',
      'i03',
      'i04',
      'i01',
      'i02',
    ]);
  });

  test('%, _ and \\ in values are literal', async () => {
    expect(await allIds({ 'filter[name]': '100%' })).toEqual(['i06']);
    expect(await allIds({ 'filter[name]': '100%*' })).toEqual(['i06']);
    expect(await allIds({ 'filter[name]': '*%' })).toEqual(['i06']);
    expect(await allIds({ 'filter[os]': 'a_b*' })).toEqual(['i07']);
    expect(await allIds({ 'filter[os]': '*_*' })).toEqual(['i07']);
    expect(await allIds({ 'filter[name]': 'back\\*' })).toEqual(['i08']);
    expect(await allIds({ 'filter[name]': '*\\slash' })).toEqual(['i08']);
    expect(await allIds({ 'filter[name]': 'db.1+(*' })).toEqual(['i03']);
    expect(await allIds({ 'filter[os]': "o'n*" })).toEqual(['i09']);
  });

  test('empty values match NULL and the empty string', async () => {
    expect(await allIds({ 'filter[os]': '' })).toEqual(['i06', 'i05']);
    expect(await allIds({ 'filter[cpus]': '' })).toEqual(['i04']);
  });

  test('numeric columns', async () => {
    expect(await allIds({ 'filter[cpus]': '4,16' })).toEqual(['i01', 'i02', 'i05']);
    expect(await allIds({ 'filter[cpus]': 'four' })).toEqual([]);
    expect(await allIds({ 'filter[cpus]': '*' })).toHaveLength(8);
    expect(await allIds({ 'filter[cpus|name]': 'db*' })).toEqual(['i03', 'i04']);
  });

  test('pagination and count before pagination', async () => {
    const page2 = await list({ 'page[limit]': '2', 'page[offset]': '2' });
    expect(page2.rows.map((r) => r.item_id)).toEqual(['i08', 'i09']);
    expect(page2.count).toBe(9);
    const last = await list({ 'page[limit]': '2', 'page[offset]': '8' });
    expect(last).toEqual({ rows: [rows[4]], count: 9 });
    const beyond = await list({ 'page[limit]': '2', 'page[offset]': '20' });
    expect(beyond).toEqual({ rows: [], count: 9 });
    const filtered = await list({ 'filter[os]': 'linux,windows*', 'page[limit]': '1', 'page[offset]': '1' });
    expect(filtered.rows.map((r) => r.item_id)).toEqual(['i04']);
    expect(filtered.count).toBe(4);
  });

  test('buildSqlList and countSqlList compose', async () => {
    const query = parseListQuery({ 'filter[os]': 'win*', 'page[limit]': '1' }, spec);
    const page = await buildSqlList(base(), query, columns).execute();
    expect(page.map((r) => r.item_id)).toEqual(['i03']);
    expect(await countSqlList(whereListFilters(base(), query.filters, columns))).toBe(2);
    // the count ignores ORDER BY / LIMIT / OFFSET of the query it is given
    expect(
      await countSqlList(buildSqlList(base(), { ...query, page: { limit: 1, offset: 5 } }, columns)),
    ).toBe(2);
  });

  test('escape clause is compiled with a backslash', () => {
    const query = parseListQuery({ 'filter[name]': 'a*' }, spec);
    const compiled = buildSqlList(base(), query, columns).compile();
    expect(compiled.sql).toContain(`like ? escape '\\'`);
    expect(compiled.parameters).toContain('a%');
  });

  test('a NOT NULL column sorts without the IS NULL key, so an index can serve it', () => {
    const query = parseListQuery({ sort: '-cpus' }, spec);
    const options = { tieBreaker: 'item_id' };
    const nullable = buildSqlList(base(), query, columns, options).compile().sql;
    expect(nullable).toContain('("cpus" is null) asc');
    const notNullColumns = { ...columns, cpus: { column: 'cpus', type: 'number' as const, notNull: true } };
    const notNull = buildSqlList(base(), query, notNullColumns, options).compile().sql;
    expect(notNull).not.toContain('is null');
    expect(notNull).toContain('order by "cpus" desc, "item_id" asc');
  });

  test('time columns match the period a value names; other values match nothing', async () => {
    // The cpus column stands in for epoch milliseconds: 4 ms after the epoch is in 1970-01-01T00:00:00.004.
    const timeColumns = { ...columns, cpus: { column: 'cpus', type: 'time' as const } };
    const timeSpec = { ...spec, timeFields: ['cpus'], pagination: { defaultLimit: 100, maxLimit: 100 } };
    const timeIds = async (value: string) => {
      const query = parseListQuery({ 'filter[cpus]': value }, timeSpec);
      const { rows } = await executeSqlList(base(), query, timeColumns, { tieBreaker: 'item_id' });
      return rows.map((r) => r.item_id);
    };
    expect(await timeIds('1970-01-01T00:00:00.004Z')).toEqual(['i01', 'i05']);
    expect(await timeIds('1970-01-01T00:00:00.01')).toEqual(['i02']);
    expect((await timeIds('1970-01-01T00:00:00.00*')).sort()).toEqual([
      'i01',
      'i03',
      'i05',
      'i06',
      'i07',
      'i08',
      'i09',
    ]);
    expect(await timeIds('1970-01-01')).toHaveLength(8);
    expect(await timeIds('1970-01-02')).toEqual([]);
    expect(await timeIds('')).toEqual(['i04']);
    const filter = { fields: ['cpus'], values: ['soon'] };
    const { rows } = await executeSqlList(base(), { sort: [], filters: [filter] }, timeColumns);
    expect(rows).toEqual([]);
  });

  test('unmapped fields are a programming error', () => {
    const q: ListQuery = { sort: [], filters: [{ fields: ['nope'], values: ['x'] }] };
    expect(() => buildSqlList(base(), q, columns)).toThrow(/no SQL column mapped for field 'nope'/);
  });

  test('agrees with the in-memory implementation', async () => {
    const queries: Record<string, string | string[]>[] = [
      {},
      { sort: '-os' },
      { sort: ['os', 'cpus'] },
      { 'filter[name]': '*b*' },
      { 'filter[name|os]': '*l*', sort: '-cpus' },
      { 'filter[os]': ',linux', 'page[limit]': '2', 'page[offset]': '1' },
      { 'filter[name]': '100%,back\\slash' },
    ];
    for (const q of queries) {
      const query = parseListQuery(q, spec);
      const sqlResult = await executeSqlList(base(), query, columns, { tieBreaker: 'item_id' });
      const memory = applyListQuery(apiItems, query);
      expect(
        sqlResult.rows.map((r) => r.item_id),
        JSON.stringify(q),
      ).toEqual(memory.data.map((r) => r.id));
      expect(sqlResult.count, JSON.stringify(q)).toBe(memory.count);
    }
  });
});
