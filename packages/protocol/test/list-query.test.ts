import { describe, expect, test } from 'vitest';
import {
  AppError,
  ERROR_CODES,
  applyListQuery,
  compileWildcard,
  parseListQuery,
  pickFields,
} from '@svc/protocol';
import type { ListQuery, ListSpec } from '@svc/protocol';

const spec: ListSpec = {
  resource: 'clients',
  sortable: ['id', 'name', 'os', 'cpus', 'connected'],
  defaultSort: 'name',
  filterable: ['id', 'name', 'os', 'tags', 'labels', 'cpus', 'connected', 'ip'],
  fields: ['id', 'name', 'os', 'tags', 'labels', 'cpus', 'connected', 'ip'],
  pagination: { defaultLimit: 50, maxLimit: 500 },
};

const unpaginated: ListSpec = {
  resource: 'users',
  sortable: ['username'],
  defaultSort: 'username',
  filterable: ['username'],
  fields: ['username', 'groups'],
};

interface Client {
  id: string;
  name: string | null;
  os?: string;
  tags: string[];
  labels: Record<string, string>;
  cpus: number | null;
  connected: boolean;
  ip: string;
}

const clients: Client[] = [
  {
    id: 'c1',
    name: 'web-01',
    os: 'Linux',
    tags: ['prod', 'web'],
    labels: { city: 'Berlin', role: 'web' },
    cpus: 4,
    connected: true,
    ip: '10.0.0.1',
  },
  {
    id: 'c2',
    name: 'Web-02',
    os: 'linux',
    tags: ['staging'],
    labels: { city: 'Paris' },
    cpus: 16,
    connected: false,
    ip: '10.0.0.2',
  },
  {
    id: 'c3',
    name: 'db.1+(x)',
    os: 'Windows',
    tags: [],
    labels: {},
    cpus: 2,
    connected: true,
    ip: '192.168.1.10',
  },
  {
    id: 'c4',
    name: 'db11',
    os: 'Windows Server',
    tags: ['prod'],
    labels: { city: 'Berlin' },
    cpus: null,
    connected: false,
    ip: '10.0.1.7',
  },
  {
    id: 'c5',
    name: null,
    tags: ['prod'],
    labels: { role: 'db' },
    cpus: 4,
    connected: true,
    ip: '172.16.0.5',
  },
];

const run = (q: Record<string, string | string[]>, s: ListSpec = spec) =>
  applyListQuery(clients, parseListQuery(q, s));
const ids = (q: Record<string, string | string[]>) => run(q).data.map((c) => c.id);

const errorsOf = (q: Record<string, string | string[]> | URLSearchParams, s: ListSpec = spec): string[] => {
  try {
    parseListQuery(q, s);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    const e = err as AppError;
    expect(e.kind).toBe('invalid');
    expect(e.code).toBe(ERROR_CODES.invalidQuery);
    for (const it of e.extra) expect(it.code).toBe(ERROR_CODES.invalidQuery);
    return e.toItems().map((i) => i.title);
  }
  throw new Error('expected parseListQuery to throw');
};

describe('parseListQuery', () => {
  test('defaults', () => {
    expect(parseListQuery({}, spec)).toEqual({
      sort: [{ field: 'name', direction: 'asc' }],
      filters: [],
      page: { limit: 50, offset: 0 },
    });
    expect(parseListQuery(undefined, unpaginated)).toEqual({
      sort: [{ field: 'username', direction: 'asc' }],
      filters: [],
    });
    expect(parseListQuery({}, { ...spec, defaultSort: '-cpus,name', defaultFields: ['id'] })).toEqual({
      sort: [
        { field: 'cpus', direction: 'desc' },
        { field: 'name', direction: 'asc' },
      ],
      filters: [],
      fields: ['id'],
      page: { limit: 50, offset: 0 },
    });
  });

  test('sort keys, repeated and comma-separated', () => {
    expect(parseListQuery({ sort: ['-os', 'name'] }, spec).sort).toEqual([
      { field: 'os', direction: 'desc' },
      { field: 'name', direction: 'asc' },
    ]);
    expect(parseListQuery({ sort: '-os,name' }, spec).sort).toEqual([
      { field: 'os', direction: 'desc' },
      { field: 'name', direction: 'asc' },
    ]);
    // '+name' arrives as ' name' after URL decoding
    expect(parseListQuery(new URLSearchParams('sort=+name&sort=name'), spec).sort).toEqual([
      { field: 'name', direction: 'asc' },
    ]);
  });

  test('filters', () => {
    expect(
      parseListQuery({ 'filter[os]': 'linux, windows', 'filter[name|id]': 'web*' }, spec).filters,
    ).toEqual([
      { fields: ['os'], values: ['linux', 'windows'] },
      { fields: ['name', 'id'], values: ['web*'] },
    ]);
    expect(parseListQuery({ 'filter[*]': 'x' }, spec).filters).toEqual([
      { fields: [...spec.filterable], values: ['x'] },
    ]);
    expect(parseListQuery({ 'filter[os]': ['a', 'b'] }, spec).filters).toHaveLength(2);
    expect(parseListQuery({ 'filter[os]': '' }, spec).filters).toEqual([{ fields: ['os'], values: [''] }]);
  });

  test('fields and pages', () => {
    const q = parseListQuery(
      { 'fields[clients]': 'id, name', 'page[limit]': '500', 'page[offset]': '7' },
      spec,
    );
    expect(q.fields).toEqual(['id', 'name']);
    expect(q.page).toEqual({ limit: 500, offset: 7 });
    expect(parseListQuery({ 'page[limit]': '1' }, spec).page).toEqual({ limit: 1, offset: 0 });
  });

  test('URLSearchParams input', () => {
    const q = parseListQuery(new URLSearchParams('sort=-id&filter%5Bos%5D=linux&page[limit]=3'), spec);
    expect(q).toEqual({
      sort: [{ field: 'id', direction: 'desc' }],
      filters: [{ fields: ['os'], values: ['linux'] }],
      page: { limit: 3, offset: 0 },
    });
  });

  test('ignores parameters that are not list parameters', () => {
    expect(
      parseListQuery(
        { 'token-lifetime': '3600', sorting: 'x', filters: 'y', 'fieldset[a]': 'b', pages: '1', q: 'z' },
        spec,
      ),
    ).toEqual(parseListQuery({}, spec));
  });

  test.each<[string, Record<string, string | string[]>, ListSpec, string]>([
    [
      'unknown sort',
      { sort: 'foo' },
      spec,
      "unsupported sort field 'foo'; sortable fields: id, name, os, cpus, connected",
    ],
    ['unknown desc sort', { sort: '-foo' }, spec, "unsupported sort field 'foo'"],
    ['empty sort', { sort: '' }, spec, 'sort must name a field, e.g. sort=name or sort=-name'],
    ['bare minus', { sort: '-' }, spec, 'sort must name a field'],
    ['bracketed sort', { 'sort[name]': 'asc' }, spec, "unsupported sort parameter 'sort[name]'"],
    [
      'unknown filter',
      { 'filter[x]': '1' },
      spec,
      "unsupported filter field 'x'; filterable fields: id, name",
    ],
    ['unknown in or-filter', { 'filter[name|x]': '1' }, spec, "unsupported filter field 'x'"],
    ['bare filter', { filter: '1' }, spec, "unsupported filter parameter 'filter'"],
    ['empty filter brackets', { 'filter[]': '1' }, spec, "unsupported filter parameter 'filter[]'"],
    ['filter operator', { 'filter[name][gt]': '1' }, spec, "unsupported filter parameter 'filter[name][gt]'"],
    [
      'other resource',
      { 'fields[jobs]': 'id' },
      spec,
      'unsupported resource in fields[jobs]; use fields[clients]',
    ],
    [
      'unknown field',
      { 'fields[clients]': 'id,secret' },
      spec,
      "unsupported field 'secret' in fields[clients]",
    ],
    ['empty fields', { 'fields[clients]': ' , ' }, spec, 'fields[clients] must list at least one field'],
    ['bare fields', { fields: 'id' }, spec, "unsupported fields parameter 'fields'"],
    ['limit zero', { 'page[limit]': '0' }, spec, 'page[limit] must be between 1 and 500'],
    ['limit too big', { 'page[limit]': '501' }, spec, 'page[limit] must be between 1 and 500'],
    ['limit negative', { 'page[limit]': '-1' }, spec, 'page[limit] must be an integer between 1 and 500'],
    ['limit text', { 'page[limit]': 'ten' }, spec, 'page[limit] must be an integer between 1 and 500'],
    ['limit fraction', { 'page[limit]': '1.5' }, spec, 'page[limit] must be an integer between 1 and 500'],
    ['limit huge', { 'page[limit]': '99999999999999999999' }, spec, 'page[limit] must be between 1 and 500'],
    ['offset negative', { 'page[offset]': '-1' }, spec, 'page[offset] must be an integer of 0 or more'],
    ['offset text', { 'page[offset]': 'x' }, spec, 'page[offset] must be an integer of 0 or more'],
    ['limit twice', { 'page[limit]': ['1', '2'] }, spec, 'page[limit] is given more than once'],
    ['unknown page param', { 'page[size]': '1' }, spec, "unsupported page parameter 'page[size]'"],
    ['bare page', { page: '1' }, spec, "unsupported page parameter 'page'"],
    ['not paginated', { 'page[limit]': '1' }, unpaginated, 'this list is not paginated; remove page[limit]'],
    [
      'not paginated offset',
      { 'page[offset]': '1' },
      unpaginated,
      'this list is not paginated; remove page[offset]',
    ],
  ])('error: %s', (_name, query, s, message) => {
    const titles = errorsOf(query, s);
    expect(titles).toHaveLength(1);
    expect(titles[0]).toContain(message);
  });

  test('non-string values (e.g. from a nested query parser) are rejected', () => {
    expect(errorsOf({ filter: { name: 'x' } } as unknown as Record<string, string>)).toEqual([
      "query parameter 'filter' must be a plain value",
    ]);
  });

  test('reports every problem at once, in order', () => {
    let caught: unknown;
    try {
      parseListQuery(
        {
          sort: ['foo', 'name', '-bar'],
          'filter[x]': '1',
          'filter[os]': 'linux',
          'fields[other]': 'a',
          'page[limit]': '0',
          'page[offset]': '-3',
          'token-lifetime': '10',
        },
        spec,
      );
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(AppError);
    const e = caught as AppError;
    expect(e.message).toContain("unsupported sort field 'foo'");
    expect(e.detail).toBe('sort=foo');
    expect(e.extra.map((i) => i.title)).toEqual([
      "unsupported sort field 'bar'; sortable fields: id, name, os, cpus, connected",
      "unsupported filter field 'x'; filterable fields: id, name, os, tags, labels, cpus, connected, ip",
      'unsupported resource in fields[other]; use fields[clients]',
      'page[limit] must be between 1 and 500',
      'page[offset] must be an integer of 0 or more',
    ]);
    expect(e.toItems()).toHaveLength(6);
  });

  test('a list without sortable or filterable fields says so', () => {
    const bare: ListSpec = { resource: 'r', sortable: [], defaultSort: '', filterable: [], fields: [] };
    expect(errorsOf({ sort: 'a', 'filter[b]': 'c' }, bare)).toEqual([
      "unsupported sort field 'a'; this list cannot be sorted",
      "unsupported filter field 'b'; this list cannot be filtered",
    ]);
    expect(parseListQuery({}, bare)).toEqual({ sort: [], filters: [] });
  });
});

describe('compileWildcard', () => {
  test.each<[string, string, boolean]>([
    ['abc', 'abc', true],
    ['abc', 'ABC', true],
    ['abc', 'abcd', false],
    ['ab*', 'abcd', true],
    ['ab*', 'xabcd', false],
    ['*cd', 'abcd', true],
    ['*cd', 'abcdx', false],
    ['*bc*', 'abcd', true],
    ['*bc*', 'acbd', false],
    ['*', '', true],
    ['*', 'anything', true],
    ['**', 'x', true],
    ['a*a', 'a', false],
    ['a*a', 'aa', true],
    ['a*b*c', 'aXbYc', true],
    ['a*b*c', 'aXcYb', false],
    ['a*bc*bc', 'abcXbc', true],
    ['a*bc*bc', 'abc', false],
    ['.+(', '.+(', true],
    ['.+(', 'a+(', false],
    ['a.c', 'abc', false],
    ['[a]', 'a', false],
    ['^$|\\', '^$|\\', true],
    ['%_', 'ab', false],
  ])('%s ~ %s = %s', (pattern, text, expected) => {
    expect(compileWildcard(pattern)(text)).toBe(expected);
  });

  test('no catastrophic backtracking', () => {
    // A backtracking matcher would try every placement of 200 segments in 50,000 characters and never end
    // within the test's timeout; a forward scan answers at once.
    const text = 'a'.repeat(50_000);
    const pattern = `${'*a'.repeat(200)}*b*`;
    expect(compileWildcard(pattern)(text)).toBe(false);
    expect(compileWildcard(pattern)(`${text}b`)).toBe(true);
  });
});

describe('applyListQuery', () => {
  test('default sort: case-insensitive, nulls last', () => {
    expect(ids({})).toEqual(['c3', 'c4', 'c1', 'c2', 'c5']);
  });

  test('asc and desc', () => {
    expect(ids({ sort: 'cpus' })).toEqual(['c3', 'c1', 'c5', 'c2', 'c4']);
    expect(ids({ sort: '-cpus' })).toEqual(['c2', 'c1', 'c5', 'c3', 'c4']);
    expect(ids({ sort: '-name' })).toEqual(['c2', 'c1', 'c4', 'c3', 'c5']);
    expect(ids({ sort: 'connected' })).toEqual(['c2', 'c4', 'c1', 'c3', 'c5']);
  });

  test('later sort keys break ties; sorting is stable', () => {
    expect(ids({ sort: ['cpus', '-id'] })).toEqual(['c3', 'c5', 'c1', 'c2', 'c4']);
    expect(ids({ sort: ['-connected', 'cpus'] })).toEqual(['c3', 'c1', 'c5', 'c2', 'c4']);
    expect(ids({ sort: ['-connected', '-cpus', 'id'] })).toEqual(['c1', 'c5', 'c3', 'c2', 'c4']);
    // equal keys keep input order
    expect(ids({ sort: 'connected', 'filter[connected]': 'true' })).toEqual(['c1', 'c3', 'c5']);
  });

  test('case-insensitive string order with a case-sensitive tie-break', () => {
    const rows = [{ n: 'b' }, { n: 'B' }, { n: 'a' }, { n: 'A' }, { n: 'a10' }, { n: 'a2' }];
    const q: ListQuery = { sort: [{ field: 'n', direction: 'asc' }], filters: [] };
    expect(applyListQuery(rows, q).data.map((r) => r.n)).toEqual(['A', 'a', 'a10', 'a2', 'B', 'b']);
  });

  test('comma means OR', () => {
    expect(ids({ 'filter[id]': 'c1,c3' })).toEqual(['c3', 'c1']);
  });

  test('several filters AND', () => {
    expect(ids({ 'filter[os]': 'linux', 'filter[cpus]': '4' })).toEqual(['c1']);
    expect(ids({ 'filter[os]': ['linux*', '*2'] })).toEqual([]);
    expect(ids({ 'filter[tags]': ['prod', 'web'] })).toEqual(['c1']);
  });

  test('a|b means OR across fields', () => {
    expect(ids({ 'filter[name|os]': 'windows*' })).toEqual(['c3', 'c4']);
    expect(ids({ 'filter[name|os]': 'db11,linux' })).toEqual(['c4', 'c1', 'c2']);
    expect(ids({ 'filter[*]': 'berlin' })).toEqual([]);
    expect(ids({ 'filter[*]': 'city: berlin' })).toEqual(['c4', 'c1']);
  });

  test('wildcards', () => {
    expect(ids({ 'filter[name]': 'web*' })).toEqual(['c1', 'c2']);
    expect(ids({ 'filter[name]': '*1' })).toEqual(['c4', 'c1']);
    expect(ids({ 'filter[name]': '*b1*' })).toEqual(['c4']);
    expect(ids({ 'filter[ip]': '10.0.*.1*' })).toEqual(['c1']);
    expect(ids({ 'filter[name]': '*' })).toEqual(['c3', 'c4', 'c1', 'c2']);
    expect(ids({ 'filter[os]': '*' })).toEqual(['c3', 'c4', 'c1', 'c2']);
  });

  test('regex metacharacters are literal', () => {
    expect(ids({ 'filter[name]': 'db.1+(x)' })).toEqual(['c3']);
    expect(ids({ 'filter[name]': 'db.1+(*' })).toEqual(['c3']);
    expect(ids({ 'filter[name]': 'db.*' })).toEqual(['c3']);
    expect(ids({ 'filter[name]': 'db.1' })).toEqual([]);
    expect(ids({ 'filter[ip]': '10.0.0.?' })).toEqual([]);
    expect(ids({ 'filter[ip]': '10\\.0.*' })).toEqual([]);
  });

  test('case-insensitive matching', () => {
    expect(ids({ 'filter[os]': 'LINUX' })).toEqual(['c1', 'c2']);
    expect(ids({ 'filter[name]': 'WEB-0*' })).toEqual(['c1', 'c2']);
    expect(ids({ 'filter[connected]': 'TRUE' })).toEqual(['c3', 'c1', 'c5']);
  });

  test('arrays match when any element matches', () => {
    expect(ids({ 'filter[tags]': 'prod' })).toEqual(['c4', 'c1', 'c5']);
    expect(ids({ 'filter[tags]': 'stag*' })).toEqual(['c2']);
    expect(ids({ 'filter[tags]': '*' })).toEqual(['c4', 'c1', 'c2', 'c5']);
  });

  test('label objects match as "key: value"', () => {
    expect(ids({ 'filter[labels]': 'city: Berlin' })).toEqual(['c4', 'c1']);
    expect(ids({ 'filter[labels]': 'city:berlin' })).toEqual(['c4', 'c1']);
    expect(ids({ 'filter[labels]': 'CITY  :  berlin' })).toEqual(['c4', 'c1']);
    expect(ids({ 'filter[labels]': 'role:*' })).toEqual(['c1', 'c5']);
    expect(ids({ 'filter[labels]': 'city*' })).toEqual(['c4', 'c1', 'c2']);
    expect(ids({ 'filter[labels]': 'berlin' })).toEqual([]);
    expect(ids({ 'filter[labels]': '*: web' })).toEqual(['c1']);
    // normalisation touches label matching only, and only the first colon
    const rows = [{ v: 'a:b' }, { v: { url: 'http://x' } }];
    const q = (value: string): ListQuery => ({ sort: [], filters: [{ fields: ['v'], values: [value] }] });
    expect(applyListQuery(rows, q('a:b')).count).toBe(1);
    expect(applyListQuery(rows, q('a: b')).count).toBe(0);
    expect(applyListQuery(rows, q('url:http://x')).count).toBe(1);
  });

  test('numbers and empty values', () => {
    expect(ids({ 'filter[cpus]': '4' })).toEqual(['c1', 'c5']);
    expect(ids({ 'filter[cpus]': '1*' })).toEqual(['c2']);
    expect(ids({ 'filter[cpus]': '' })).toEqual(['c4']);
    expect(ids({ 'filter[tags]': '' })).toEqual(['c3']);
    expect(ids({ 'filter[labels]': '' })).toEqual(['c3']);
    expect(ids({ 'filter[name]': ',' })).toEqual(['c5']);
    expect(ids({ 'filter[os]': ',linux' })).toEqual(['c1', 'c2']);
  });

  test('sparse fields', () => {
    const { data } = run({ 'fields[clients]': 'name,id', 'filter[id]': 'c1' });
    expect(data).toEqual([{ name: 'web-01', id: 'c1' }]);
    expect(Object.keys(data[0] ?? {})).toEqual(['name', 'id']);
    // a field the item lacks is left out, not set to undefined
    expect(run({ 'fields[clients]': 'id,os', 'filter[id]': 'c5' }).data).toEqual([{ id: 'c5' }]);
    expect(pickFields({ a: 1, b: 2 })).toEqual({ a: 1, b: 2 });
  });

  test('pagination and count before pagination', () => {
    expect(run({ 'page[limit]': '2' })).toEqual({
      data: [clients[2], clients[3]],
      count: 5,
    });
    expect(run({ 'page[limit]': '2', 'page[offset]': '4' }).data.map((c) => c.id)).toEqual(['c5']);
    expect(run({ 'page[limit]': '2', 'page[offset]': '10' })).toEqual({ data: [], count: 5 });
    expect(run({ 'page[limit]': '1', 'filter[os]': 'linux' })).toEqual({ data: [clients[0]], count: 2 });
    // default limit applies
    const many = Array.from({ length: 120 }, (_, i) => ({ id: i }));
    const res = applyListQuery(many, parseListQuery({ sort: 'id' }, { ...spec, sortable: ['id'] }));
    expect(res.count).toBe(120);
    expect(res.data).toHaveLength(50);
  });

  test('custom accessor for computed fields', () => {
    const q = parseListQuery({ 'filter[os]': 'linux', sort: '-os' }, spec);
    const res = applyListQuery(clients, q, (c, field) => (field === 'os' ? c.os?.split(' ')[0] : undefined));
    // 'Linux' and 'linux' tie case-insensitively; the case-sensitive tie-break is reversed too
    expect(res.data.map((c) => c.id)).toEqual(['c2', 'c1']);
  });

  test('does not mutate its input', () => {
    const copy = structuredClone(clients);
    run({ sort: '-cpus', 'fields[clients]': 'id' });
    expect(clients).toEqual(copy);
  });
});
