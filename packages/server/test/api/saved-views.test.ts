import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ADMIN, OPERATOR, startTestServer, type TestServer } from '../../../../test-support/server.js';

const basic = (username: string, password: string) => ({
  auth: { basic: [username, password] as [string, string] },
});
const asAdmin = basic(ADMIN.username, ADMIN.password);
const asOperator = basic(OPERATOR.username, OPERATOR.password);
const RFC3339_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('saved views (GET/POST /me/views, GET/PUT/DELETE /me/views/{id})', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ store: 'database:sqlite' });
  });
  afterAll(() => t?.stop());

  const create = async (body: object, as = asAdmin) => {
    const res = await t.api.post('/me/views', body, as);
    expect(res.status, res.text).toBe(201);
    return res.json.data as { id: string; name: string; search: string; updated_at: string };
  };

  test('a view is created with defaults, listed by name, read, changed and deleted by its owner', async () => {
    const full = await create({
      name: 'Linux web servers',
      page: 'clients',
      search: 'state=connected&tags=linux%2Cweb&cols=name%2Cos',
      columns: ['name', 'os'],
      sort: '-connection_state,name',
    });
    expect(full).toEqual({
      id: expect.stringMatching(/^[A-Za-z0-9_-]{12}$/),
      name: 'Linux web servers',
      page: 'clients',
      search: 'state=connected&tags=linux%2Cweb&cols=name%2Cos',
      columns: ['name', 'os'],
      sort: '-connection_state,name',
      created_at: expect.stringMatching(RFC3339_MS),
      updated_at: expect.stringMatching(RFC3339_MS),
    });
    const bare = await create({ name: '  All clients ', page: 'clients' });
    expect(bare).toMatchObject({ name: 'All clients', search: '', columns: [], sort: '' });

    const list = await t.api.get('/me/views', asAdmin);
    expect(list.status).toBe(200);
    expect(list.json.meta).toEqual({ count: 2 });
    expect((list.json.data as { name: string }[]).map((v) => v.name)).toEqual([
      'All clients',
      'Linux web servers',
    ]);
    expect((await t.api.get(`/me/views/${full.id}`, asAdmin)).json.data).toEqual(full);

    const renamed = await t.api.put(`/me/views/${full.id}`, { name: 'Web', columns: ['id'] }, asAdmin);
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.json.data).toMatchObject({
      id: full.id,
      name: 'Web',
      columns: ['id'],
      search: full.search,
    });

    expect((await t.api.delete(`/me/views/${full.id}`, asAdmin)).status).toBe(204);
    const gone = await t.api.get(`/me/views/${full.id}`, asAdmin);
    expect(gone.status).toBe(404);
    expect(gone.json.errors[0].code).toBe('ERR_SAVED_VIEW_NOT_FOUND');
    expect((await t.api.delete(`/me/views/${bare.id}`, asAdmin)).status).toBe(204);
  });

  test('views are per user: another user neither sees, changes nor deletes them, and may reuse the name', async () => {
    const mine = await create({ name: 'Shared name', page: 'clients' });
    expect((await t.api.get('/me/views', asOperator)).json).toEqual({ data: [], meta: { count: 0 } });
    expect((await t.api.get(`/me/views/${mine.id}`, asOperator)).status).toBe(404);
    expect((await t.api.put(`/me/views/${mine.id}`, { name: 'x' }, asOperator)).status).toBe(404);
    expect((await t.api.delete(`/me/views/${mine.id}`, asOperator)).status).toBe(404);
    await create({ name: 'Shared name', page: 'clients' }, asOperator);
    expect((await t.api.get(`/me/views/${mine.id}`, asAdmin)).json.data.name).toBe('Shared name');
  });

  test('a second view of one name is a 409, by creation or by rename', async () => {
    const one = await create({ name: 'dup-one', page: 'clients' });
    await create({ name: 'dup-two', page: 'clients' });
    const again = await t.api.post('/me/views', { name: 'dup-one', page: 'clients' }, asAdmin);
    expect(again.status).toBe(409);
    expect(again.json.errors[0]).toMatchObject({
      code: 'ERR_SAVED_VIEW_EXISTS',
      title: "You already have a saved view named 'dup-one'",
    });
    const rename = await t.api.put(`/me/views/${one.id}`, { name: 'dup-two' }, asAdmin);
    expect(rename.status).toBe(409);
    expect((await t.api.get(`/me/views/${one.id}`, asAdmin)).json.data.name).toBe('dup-one');
  });

  test('one user keeps at most 200 views; the 201st is a 409 until one is deleted', async () => {
    const many = basic('operator', OPERATOR.password);
    const existing = ((await t.api.get('/me/views', many)).json.data as unknown[]).length;
    for (let i = existing; i < 200; i += 20) {
      await Promise.all(
        Array.from({ length: Math.min(20, 200 - i) }, (_, k) =>
          create({ name: `bulk ${i + k}`, page: 'clients' }, many),
        ),
      );
    }
    expect((await t.api.get('/me/views', many)).json.meta).toEqual({ count: 200 });
    const over = await t.api.post('/me/views', { name: 'one more', page: 'clients' }, many);
    expect(over.status).toBe(409);
    expect(over.json.errors[0].code).toBe('ERR_SAVED_VIEW_LIMIT');
    // Another user is not held back by this one's views.
    await create({ name: 'admin still can', page: 'clients' });
    const first = ((await t.api.get('/me/views', many)).json.data as { id: string }[])[0];
    expect((await t.api.delete(`/me/views/${first?.id}`, many)).status).toBe(204);
    await create({ name: 'one more', page: 'clients' }, many);
  });

  test('bad input is a 400 naming the field; unknown ids are 404; no credentials 401', async () => {
    const cases: [object, RegExp][] = [
      [{ page: 'clients' }, /^name: /],
      [{ name: '', page: 'clients' }, /^name: must not be empty/],
      [{ name: 'x'.repeat(101), page: 'clients' }, /^name: must be at most 100 characters/],
      [{ name: 'a', page: 'users' }, /^page: must be one of "clients"/],
      [{ name: 'a', page: 'clients', search: '?q=1' }, /^search: must be a URL query string/],
      [{ name: 'a', page: 'clients', search: 'x'.repeat(4001) }, /^search: must be at most 4000/],
      [{ name: 'a', page: 'clients', columns: ['name', 'name'] }, /^columns: must not repeat a column/],
      [{ name: 'a', page: 'clients', columns: ['bad col'] }, /^columns\.0: each column must be/],
      [
        { name: 'a', page: 'clients', columns: Array.from({ length: 41 }, (_, i) => `c${i}`) },
        /^columns: must have at most 40/,
      ],
      [{ name: 'a', page: 'clients', sort: 'name;drop' }, /^sort: must be fields separated by commas/],
      [{ name: 'a', page: 'clients', extra: 1 }, /extra/],
    ];
    for (const [body, title] of cases) {
      const res = await t.api.post('/me/views', body, asAdmin);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.errors[0].title, JSON.stringify(body)).toMatch(title);
    }
    const view = await create({ name: 'for-put', page: 'clients' });
    const empty = await t.api.put(`/me/views/${view.id}`, {}, asAdmin);
    expect(empty.status).toBe(400);
    expect(empty.json.errors[0].code).toBe('ERR_NOTHING_TO_CHANGE');
    expect((await t.api.put(`/me/views/${view.id}`, { page: 'clients' }, asAdmin)).status).toBe(400);
    for (const id of ['nope', 'x'.repeat(40), '..%2F..']) {
      expect((await t.api.get(`/me/views/${id}`, asAdmin)).status, id).toBe(404);
      expect((await t.api.delete(`/me/views/${id}`, asAdmin)).status, id).toBe(404);
    }
    expect((await t.api.get('/me/views')).status).toBe(401);
    expect((await t.api.post('/me/views', { name: 'a', page: 'clients' })).status).toBe(401);
    expect((await t.api.delete(`/me/views/${view.id}`)).status).toBe(401);
  });
});
