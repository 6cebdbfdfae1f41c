import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ApiResponse } from '../../../../test-support/api-client.js';
import {
  ADMIN,
  OPERATOR,
  startTestServer,
  type StoreKind,
  type TestServer,
} from '../../../../test-support/server.js';

const asAdmin = { auth: { basic: [ADMIN.username, ADMIN.password] as [string, string] } };
const asOperator = { auth: { basic: [OPERATOR.username, OPERATOR.password] as [string, string] } };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

interface Script {
  id: string;
  name: string;
  interpreter: string;
  is_sudo: boolean;
  cwd: string;
  script: string;
  tags: string[];
  timeout_sec: number;
  created_by: string;
  created_at: string;
  updated_by: string;
  updated_at: string;
}

const STORES: StoreKind[] = ['database:sqlite', 'database:postgres'];

describe.each(STORES)('script library API on %s', (store) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ store });
  });
  afterAll(() => t?.stop());

  const create = async (body: Record<string, unknown>, as = asOperator): Promise<Script> => {
    const res = await t.api.post('/library/scripts', body, as);
    expect(res.status, res.text).toBe(201);
    return res.json.data as Script;
  };
  const firstError = (res: ApiResponse) => res.json.errors[0] as { code: string; title: string };
  const names = (res: ApiResponse) => (res.json.data as Script[]).map((s) => s.name);

  test('every route answers 401 without credentials and with wrong ones, and changes nothing', async () => {
    const kept = await create({ name: 'auth-kept', script: 'echo kept' });
    const routes: [string, string, unknown][] = [
      ['POST', '/library/scripts', { name: 'auth-new', script: 'echo' }],
      ['GET', '/library/scripts', undefined],
      ['GET', `/library/scripts/${kept.id}`, undefined],
      [
        'PUT',
        `/library/scripts/${kept.id}`,
        { name: 'auth-changed', interpreter: '', is_sudo: false, cwd: '', script: 'x' },
      ],
      ['DELETE', `/library/scripts/${kept.id}`, undefined],
    ];
    for (const [method, path, body] of routes) {
      for (const auth of [undefined, { basic: [OPERATOR.username, 'wrong-password'] as [string, string] }]) {
        const res = await t.api.request(method, path, { body, ...(auth ? { auth } : {}) });
        expect(res.status, `${method} ${path}`).toBe(401);
        expect(firstError(res).code).toMatch(/^ERR_(AUTH_REQUIRED|BAD_CREDENTIALS)$/);
      }
    }
    expect((await t.api.get(`/library/scripts/${kept.id}`, asAdmin)).json.data).toEqual(kept);
    expect((await t.api.get('/library/scripts?filter[name]=auth-new', asAdmin)).json.meta.count).toBe(0);
  });

  test('POST answers 201 with the script: a UUID, the caller, the time, the spec defaults', async () => {
    const before = Date.now();
    const res = await t.api.post('/library/scripts', { name: 'defaults', script: 'uptime' }, asOperator);
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const script = res.json.data as Script;
    expect(script).toEqual({
      id: expect.stringMatching(UUID),
      name: 'defaults',
      interpreter: '',
      is_sudo: false,
      cwd: '',
      script: 'uptime',
      tags: [],
      timeout_sec: 60,
      created_by: OPERATOR.username,
      created_at: expect.stringMatching(RFC3339),
      updated_by: OPERATOR.username,
      updated_at: script.created_at,
    });
    const createdAt = Date.parse(script.created_at);
    expect(createdAt).toBeGreaterThanOrEqual(before - 1);
    expect(createdAt).toBeLessThanOrEqual(Date.now() + 1);
    expect((await t.api.get(`/library/scripts/${script.id}`, asAdmin)).json).toEqual({ data: script });
  });

  test('POST keeps every field as sent; the script text is plain text, not base64', async () => {
    const body = {
      name: 'Zoë’s disk check 😀',
      interpreter: '/usr/bin/python3',
      is_sudo: true,
      cwd: '/var/tmp',
      script: '#!/usr/bin/env python3\nprint("héllo")\n',
    };
    const script = await create(body, asAdmin);
    expect(script).toMatchObject({ ...body, created_by: ADMIN.username });
    expect((await t.api.get(`/library/scripts/${script.id}`, asOperator)).json.data).toEqual(script);
  });

  test('POST refuses bad bodies with a 400 naming the field', async () => {
    const cases: [unknown, RegExp][] = [
      [{ script: 'echo' }, /^name: is required/],
      [{ name: 'no-script' }, /^script: is required/],
      [{ name: '', script: 'echo' }, /^name: must not be empty/],
      [{ name: ' padded', script: 'echo' }, /^name: must not start or end with blanks/],
      [{ name: 'x'.repeat(201), script: 'echo' }, /^name: must be at most 200 characters/],
      [{ name: 'tab\there', script: 'echo' }, /^name: must not contain control characters/],
      [{ name: 'blank', script: '  \n' }, /^script: must not be empty/],
      [{ name: 'big', script: 'x'.repeat(160 * 1024 + 1) }, /^script: must be at most 163840 bytes/],
      [{ name: 'types', script: 'echo', is_sudo: 'yes' }, /^is_sudo: /],
      [{ name: 'types', script: 'echo', interpreter: 5 }, /^interpreter: /],
      [{ name: 'own id', script: 'echo', id: UNKNOWN_ID }, /unknown field 'id'; remove it/],
      [{ name: 'own author', script: 'echo', created_by: 'eve' }, /unknown field 'created_by'/],
      [{ name: 'own change', script: 'echo', updated_by: 'eve' }, /unknown field 'updated_by'/],
      [{ name: 'types', script: 'echo', tags: 'daily' }, /^tags: /],
      [{ name: 'types', script: 'echo', tags: [''] }, /^tags\.0: a tag must not be empty/],
      [{ name: 'types', script: 'echo', tags: ['a\nb'] }, /^tags\.0: a tag must not contain control/],
      [{ name: 'types', script: 'echo', tags: ['t'.repeat(101)] }, /^tags\.0: a tag must be at most 100/],
      [{ name: 'types', script: 'echo', tags: Array(101).fill('t') }, /^tags: give at most 100 tags/],
      [{ name: 'types', script: 'echo', timeout_sec: -1 }, /^timeout_sec: /],
      [{ name: 'types', script: 'echo', timeout_sec: 1.5 }, /^timeout_sec: /],
      [{ name: 'types', script: 'echo', timeout_sec: '10s' }, /^timeout_sec: /],
      [{ name: 'types', script: 'echo', timeout_sec: 31 * 24 * 3600 + 1 }, /^timeout_sec: /],
      [['not', 'an', 'object'], /expected object/],
    ];
    for (const [body, title] of cases) {
      const res = await t.api.post('/library/scripts', body, asOperator);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(firstError(res).code).toBe('ERR_INVALID_REQUEST');
      expect(firstError(res).title).toMatch(title);
    }
    const missingBody = await t.api.request('POST', '/library/scripts', { ...asOperator, rawBody: '' });
    expect(missingBody.status).toBe(400);
    expect(firstError(missingBody).code).toBe('ERR_MISSING_BODY');
    const count = (await t.api.get('/library/scripts?filter[name]=types,own*,big,blank', asAdmin)).json;
    expect(count.meta.count).toBe(0);
  });

  test('names are unique: a second POST or a PUT to a taken name is 409 and changes nothing', async () => {
    const first = await create({ name: 'unique-one', script: 'echo 1' });
    const second = await create({ name: 'unique-two', script: 'echo 2' });
    const again = await t.api.post('/library/scripts', { name: 'unique-one', script: 'echo 3' }, asAdmin);
    expect(again.status).toBe(409);
    expect(firstError(again)).toMatchObject({
      code: 'ERR_LIBRARY_SCRIPT_EXISTS',
      title: "Another library script is named 'unique-one'",
    });
    const rename = await t.api.put(
      `/library/scripts/${second.id}`,
      { name: 'unique-one', interpreter: '', is_sudo: false, cwd: '', script: 'echo 2' },
      asOperator,
    );
    expect(rename.status).toBe(409);
    expect(firstError(rename).code).toBe('ERR_LIBRARY_SCRIPT_EXISTS');
    expect((await t.api.get(`/library/scripts/${second.id}`, asOperator)).json.data).toEqual(second);
    // Names differ by case: both may exist.
    expect(
      (await t.api.post('/library/scripts', { name: 'UNIQUE-ONE', script: 'x' }, asOperator)).status,
    ).toBe(201);
    // Keeping its own name is no clash.
    const same = await t.api.put(
      `/library/scripts/${first.id}`,
      { name: 'unique-one', interpreter: 'bash', is_sudo: false, cwd: '', script: 'echo 1' },
      asOperator,
    );
    expect(same.status).toBe(200);
  });

  test("OpenRPort's tags and timeout_sec are stored and returned; 0 and null mean the default, as in OpenRPort", async () => {
    const tagged = await create({
      name: 'tagged',
      script: 'df -h',
      tags: ['disk', 'daily', 'disk'],
      timeout_sec: 5,
    });
    expect(tagged).toMatchObject({ tags: ['disk', 'daily'], timeout_sec: 5 });
    expect((await t.api.get(`/library/scripts/${tagged.id}`, asOperator)).json.data).toEqual(tagged);
    const zero = await create({ name: 'zero-timeout', script: 'df', tags: null, timeout_sec: 0 });
    expect(zero).toMatchObject({ tags: [], timeout_sec: 60 });
    const fields = await t.api.get(`/library/scripts/${tagged.id}?fields[scripts]=tags,timeout_sec`, asAdmin);
    expect(fields.json).toEqual({ data: { tags: ['disk', 'daily'], timeout_sec: 5 } });
  });

  test('PUT replaces every field and answers 200 with the script; id and created_* stay, updated_* change', async () => {
    const original = await create({
      name: 'put-me',
      script: 'echo old',
      cwd: '/tmp',
      tags: ['old'],
      timeout_sec: 9,
    });
    const body = {
      name: 'put-me-v2',
      interpreter: 'powershell',
      is_sudo: true,
      cwd: '',
      script: 'Get-Date',
      tags: ['windows'],
      timeout_sec: 120,
    };
    const res = await t.api.put(`/library/scripts/${original.id}`, body, asAdmin);
    expect(res.status).toBe(200);
    const data = res.json.data as Script;
    expect(data).toEqual({
      ...body,
      id: original.id,
      created_by: OPERATOR.username,
      created_at: original.created_at,
      updated_by: ADMIN.username,
      updated_at: expect.stringMatching(RFC3339),
    });
    expect(Date.parse(data.updated_at)).toBeGreaterThanOrEqual(Date.parse(original.created_at));
    expect((await t.api.get(`/library/scripts/${original.id}`, asOperator)).json).toEqual(res.json);
    // As in OpenRPort, a PUT without tags and timeout_sec clears the tags and sets the default timeout.
    const { tags: _tags, timeout_sec: _timeout, ...withoutOpenRPortFields } = body;
    const cleared = await t.api.put(`/library/scripts/${original.id}`, withoutOpenRPortFields, asOperator);
    expect(cleared.status).toBe(200);
    expect(cleared.json.data).toMatchObject({ tags: [], timeout_sec: 60, updated_by: OPERATOR.username });
  });

  test('PUT without every field is 400 naming each missing one, and changes nothing', async () => {
    const original = await create({ name: 'put-partial', script: 'echo keep' });
    const full = { name: 'put-partial', interpreter: 'sh', is_sudo: true, cwd: '/srv', script: 'echo new' };
    for (const missing of Object.keys(full)) {
      const body = Object.fromEntries(Object.entries(full).filter(([key]) => key !== missing));
      const res = await t.api.put(`/library/scripts/${original.id}`, body, asOperator);
      expect(res.status, missing).toBe(400);
      expect(firstError(res)).toMatchObject({
        code: 'ERR_INVALID_REQUEST',
        title: `${missing}: is required: PUT replaces the whole script, so send every field: name, interpreter, is_sudo, cwd, script`,
      });
    }
    const onlyName = await t.api.put(`/library/scripts/${original.id}`, { name: 'x' }, asOperator);
    expect(onlyName.json.errors.map((e: { title: string }) => e.title.split(':')[0])).toEqual([
      'script',
      'interpreter',
      'is_sudo',
      'cwd',
    ]);
    const unknown = await t.api.put(`/library/scripts/${original.id}`, { ...full, labels: [] }, asOperator);
    expect(unknown.status).toBe(400);
    expect(firstError(unknown).title).toMatch(/unknown field 'labels'/);
    expect((await t.api.get(`/library/scripts/${original.id}`, asOperator)).json.data).toEqual(original);
  });

  test('unknown ids are 404 on GET, PUT and DELETE; DELETE answers 204 once', async () => {
    const script = await create({ name: 'delete-me', script: 'echo bye' });
    const full = { name: 'delete-me', interpreter: '', is_sudo: false, cwd: '', script: 'x' };
    for (const id of [UNKNOWN_ID, 'not-a-uuid']) {
      for (const res of [
        await t.api.get(`/library/scripts/${id}`, asOperator),
        await t.api.put(`/library/scripts/${id}`, full, asOperator),
        await t.api.delete(`/library/scripts/${id}`, asOperator),
      ]) {
        expect(res.status).toBe(404);
        expect(firstError(res)).toMatchObject({
          code: 'ERR_LIBRARY_SCRIPT_NOT_FOUND',
          title: `Library script '${id}' not found`,
        });
      }
    }
    const deleted = await t.api.delete(`/library/scripts/${script.id}`, asAdmin);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await t.api.delete(`/library/scripts/${script.id}`, asAdmin)).status).toBe(404);
    expect((await t.api.get(`/library/scripts/${script.id}`, asAdmin)).status).toBe(404);
    expect((await t.api.put(`/library/scripts/${script.id}`, full, asAdmin)).status).toBe(404);
    // The name is free again.
    expect(
      (await t.api.post('/library/scripts', { name: 'delete-me', script: 'x' }, asOperator)).status,
    ).toBe(201);
  });

  test('GET one takes fields[scripts]', async () => {
    const script = await create({ name: 'fields-one', script: 'echo' });
    const res = await t.api.get(`/library/scripts/${script.id}?fields[scripts]=name,created_by`, asOperator);
    expect(res.json).toEqual({ data: { name: 'fields-one', created_by: OPERATOR.username } });
    const bad = await t.api.get(`/library/scripts/${script.id}?fields[scripts]=password`, asOperator);
    expect(bad.status).toBe(400);
  });

  describe('the list', () => {
    const created: Script[] = [];
    beforeAll(async () => {
      // 25 scripts: list-00 ... list-24, made by admin (even) and operator (odd), one after another.
      for (let i = 0; i < 25; i++) {
        const name = `list-${String(i).padStart(2, '0')}`;
        created.push(await create({ name, script: `echo ${i}` }, i % 2 === 0 ? asAdmin : asOperator));
      }
    });
    const list = (query: string) => t.api.get(`/library/scripts?filter[name]=list-*&${query}`, asOperator);

    test('is {data, meta.count}, sorted by name, 20 per page by default, 100 at most', async () => {
      const first = await list('');
      expect(first.status).toBe(200);
      expect(first.json.meta).toEqual({ count: 25 });
      expect(first.json.data).toEqual(created.slice(0, 20));
      const rest = await list('page[offset]=20');
      expect(names(rest)).toEqual(created.slice(20).map((s) => s.name));
      expect(rest.json.meta).toEqual({ count: 25 });
      expect(names(await list('page[limit]=100'))).toHaveLength(25);
      expect(names(await list('page[limit]=3&page[offset]=23'))).toEqual(['list-23', 'list-24']);
      expect((await list('page[offset]=99')).json).toEqual({ data: [], meta: { count: 25 } });
      for (const query of ['page[limit]=101', 'page[limit]=0', 'page[offset]=-1', 'page[limit]=ten']) {
        const bad = await list(query);
        expect(bad.status, query).toBe(400);
        expect(firstError(bad).code).toBe('ERR_INVALID_QUERY');
      }
    });

    test('sorts by id, name, created_by and created_at, - for descending, repeatable', async () => {
      const byName = created.map((s) => s.name);
      expect(names(await list('sort=-name&page[limit]=100'))).toEqual([...byName].reverse());
      expect(names(await list('sort=-created_at&page[limit]=100'))).toEqual(
        [...created]
          .sort((a, b) => Date.parse(b.created_at) - Date.parse(a.created_at) || (a.id < b.id ? -1 : 1))
          .map((s) => s.name),
      );
      expect(names(await list('sort=id&page[limit]=100'))).toEqual(
        [...created].sort((a, b) => (a.id < b.id ? -1 : 1)).map((s) => s.name),
      );
      const even = byName.filter((_, i) => i % 2 === 0);
      const odd = byName.filter((_, i) => i % 2 === 1);
      expect(names(await list('sort=created_by&sort=-name&page[limit]=100'))).toEqual([
        ...even.reverse(),
        ...odd.reverse(),
      ]);
      const bad = await list('sort=script');
      expect(bad.status).toBe(400);
      expect(firstError(bad).title).toBe(
        "unsupported sort field 'script'; sortable fields: id, name, created_by, created_at, updated_by, updated_at",
      );
    });

    test('filters by id, name, created_by, created_at with commas and * wildcards, combined with AND', async () => {
      expect(names(await list('filter[name]=list-0*,LIST-24&page[limit]=100'))).toEqual([
        'list-00',
        'list-01',
        'list-02',
        'list-03',
        'list-04',
        'list-05',
        'list-06',
        'list-07',
        'list-08',
        'list-09',
        'list-24',
      ]);
      expect(names(await list('filter[name]=*1*&filter[created_by]=admin&sort=-name'))).toEqual([
        'list-18',
        'list-16',
        'list-14',
        'list-12',
        'list-10',
      ]);
      const target = created[7] as Script;
      expect(names(await list(`filter[id]=${target.id}`))).toEqual([target.name]);
      expect(names(await list(`filter[id]=${target.id.slice(0, 12)}*`))).toContain(target.name);

      const exact = await list(`filter[created_at]=${encodeURIComponent(target.created_at)}`);
      expect(names(exact)).toContain(target.name);
      expect(
        (exact.json.data as Script[]).every((s) => s.created_at === target.created_at),
        'an exact time matches that millisecond only',
      ).toBe(true);
      const day = target.created_at.slice(0, 10);
      const sameDay = created.filter((s) => s.created_at.startsWith(day));
      expect((await list(`filter[created_at]=${day}&page[limit]=100`)).json.meta.count).toBe(sameDay.length);
      expect((await list('filter[created_at]=1999')).json).toEqual({ data: [], meta: { count: 0 } });

      const bad = await list('filter[created_at]=yesterday');
      expect(bad.status).toBe(400);
      expect(firstError(bad).title).toMatch(
        /^filter\[created_at\]: 'yesterday' is not a time; use an RFC 3339/,
      );
      const badField = await list('filter[script]=echo*');
      expect(badField.status).toBe(400);
      expect(firstError(badField).title).toBe(
        "unsupported filter field 'script'; filterable fields: id, name, created_by, created_at, updated_by, updated_at",
      );
    });

    test('sort, filter, fields and paging together', async () => {
      const res = await list(
        'filter[name]=*1*&filter[created_by]=operator&sort=-name&page[limit]=2&page[offset]=1&fields[scripts]=name,created_by',
      );
      expect(res.json).toEqual({
        data: [
          { name: 'list-19', created_by: 'operator' },
          { name: 'list-17', created_by: 'operator' },
        ],
        meta: { count: 7 },
      });
    });
  });
});
