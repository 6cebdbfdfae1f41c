import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import {
  ADMIN,
  OPERATOR,
  startTestServer,
  type StoreKind,
  type TestServer,
} from '../../../../test-support/server.js';

const asAdmin = { auth: { basic: [ADMIN.username, ADMIN.password] as [string, string] } };
const asOperator = { auth: { basic: [OPERATOR.username, OPERATOR.password] as [string, string] } };
const ENTRIES = { 'abc-1': 'password-abc-1', 'abc-2': 'password-abc-2', zeta: 'password-zeta' };

/** Writable sources: the file, and a table in each database engine (the user store decides the engine). */
const SOURCES: { name: string; source: 'file' | 'table'; store: StoreKind }[] = [
  { name: 'file', source: 'file', store: 'file' },
  { name: 'table on sqlite', source: 'table', store: 'database:sqlite' },
  { name: 'table on postgres', source: 'table', store: 'database:postgres' },
  { name: 'table on mysql', source: 'table', store: 'database:mysql' },
];

describe.each(SOURCES)('/clients-auth with the $name source', ({ source, store }) => {
  let t: TestServer;
  beforeEach(async () => {
    t = await startTestServer({ store, clientAuth: { source, entries: ENTRIES } });
  });
  afterEach(() => t?.stop());

  test('lists credentials sorted by id with meta.count, filter[id] wildcards and pagination', async () => {
    const all = await t.api.get('/clients-auth', asAdmin);
    expect(all.status).toBe(200);
    expect(all.json).toEqual({
      data: [
        { id: 'abc-1', password: 'password-abc-1' },
        { id: 'abc-2', password: 'password-abc-2' },
        { id: 'zeta', password: 'password-zeta' },
      ],
      meta: { count: 3 },
    });
    const filtered = await t.api.get('/clients-auth?filter[id]=ABC*', asAdmin);
    expect(filtered.json.data.map((c: { id: string }) => c.id)).toEqual(['abc-1', 'abc-2']);
    const page = await t.api.get('/clients-auth?page[limit]=1&page[offset]=1', asAdmin);
    expect(page.json).toEqual({ data: [{ id: 'abc-2', password: 'password-abc-2' }], meta: { count: 3 } });
    const none = await t.api.get('/clients-auth?filter[id]=nothing', asAdmin);
    expect(none.json).toEqual({ data: [], meta: { count: 0 } });
    const bad = await t.api.get('/clients-auth?page[limit]=501&filter[password]=x', asAdmin);
    expect(bad.status).toBe(400);
    expect(bad.json.errors).toHaveLength(2);
  });

  test('create, read, duplicate 409, delete, unknown 404', async () => {
    const created = await t.api.post(
      '/clients-auth',
      { id: 'new-client', password: 'new-password-1' },
      asAdmin,
    );
    expect(created.status).toBe(201);
    expect(created.json).toEqual({ data: { id: 'new-client' } });
    const one = await t.api.get('/clients-auth/new-client', asAdmin);
    expect(one.json).toEqual({ data: { id: 'new-client', password: 'new-password-1' } });
    const duplicate = await t.api.post(
      '/clients-auth',
      { id: 'new-client', password: 'other-password' },
      asAdmin,
    );
    expect(duplicate.status).toBe(409);
    expect(duplicate.json.errors[0].code).toBe('ERR_CLIENT_AUTH_EXISTS');
    expect((await t.api.delete('/clients-auth/new-client', asAdmin)).status).toBe(204);
    expect((await t.api.get('/clients-auth/new-client', asAdmin)).status).toBe(404);
    const missing = await t.api.delete('/clients-auth/new-client', asAdmin);
    expect(missing.status).toBe(404);
    expect(missing.json.errors[0].code).toBe('ERR_CLIENT_AUTH_NOT_FOUND');
    if (source === 'file') {
      await t.api.post('/clients-auth', { id: 'kept', password: 'kept-password' }, asAdmin);
      const saved = JSON.parse(await readFile(join(t.dataDir, 'clients-auth.json'), 'utf8')) as Record<
        string,
        string
      >;
      expect(saved).toEqual({ ...ENTRIES, kept: 'kept-password' });
    }
  });

  test('bad bodies and parameters are 400 naming the problem', async () => {
    const cases: [unknown, RegExp][] = [
      [{ id: 'a:b', password: 'password-1' }, /colon/],
      [{ id: 'x'.repeat(101), password: 'password-1' }, /100/],
      [{ id: 'ok-id', password: 'short' }, /8/],
      [{ id: 'ok-id', password: 'p'.repeat(101) }, /100/],
      [{ id: 'ok-id', password: 'password-1', extra: 1 }, /unknown field 'extra'/],
      [{ id: 5, password: 'password-1' }, /id/],
      [{ password: 'password-1' }, /id/],
    ];
    for (const [body, message] of cases) {
      const res = await t.api.post('/clients-auth', body, asAdmin);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.errors[0].title).toMatch(message);
    }
    const badForce = await t.api.delete('/clients-auth/zeta?force=maybe', asAdmin);
    expect(badForce.status).toBe(400);
    expect(badForce.json.errors[0].title).toMatch(/force/);
    expect((await t.api.get('/clients-auth', asAdmin)).json.meta.count).toBe(3);
  });

  test('only Administrators may use it (403), and everything needs authentication (401)', async () => {
    const asOperatorCalls = [
      t.api.get('/clients-auth', asOperator),
      t.api.get('/clients-auth/zeta', asOperator),
      t.api.post('/clients-auth', { id: 'x-id', password: 'password-1' }, asOperator),
      t.api.delete('/clients-auth/zeta', asOperator),
    ];
    for (const res of await Promise.all(asOperatorCalls)) expect(res.status).toBe(403);
    const anonymous = [
      t.api.get('/clients-auth'),
      t.api.get('/clients-auth/zeta'),
      t.api.post('/clients-auth', { id: 'x-id', password: 'password-1' }),
      t.api.delete('/clients-auth/zeta'),
    ];
    for (const res of await Promise.all(anonymous)) expect(res.status).toBe(401);
  });
});

describe('/clients-auth with auth_write = false', () => {
  test('every writing request is 403; reading works', async () => {
    const t = await startTestServer({
      store: 'file',
      server: { auth_write: false },
      clientAuth: { source: 'file', entries: ENTRIES },
    });
    try {
      const post = await t.api.post('/clients-auth', { id: 'x-id', password: 'password-1' }, asAdmin);
      expect(post.status).toBe(403);
      expect(post.json.errors[0].code).toBe('ERR_CLIENT_AUTH_READ_ONLY');
      const invalidPost = await t.api.post('/clients-auth', { bogus: true }, asAdmin);
      expect(invalidPost.status).toBe(403);
      expect((await t.api.delete('/clients-auth/zeta', asAdmin)).status).toBe(403);
      expect((await t.api.get('/clients-auth', asAdmin)).json.meta.count).toBe(3);
    } finally {
      await t.stop();
    }
  });
});

describe('/clients-auth without a manageable source', () => {
  test('the single static credential answers 400 explaining why', async () => {
    const t = await startTestServer({
      store: 'file',
      clientAuth: { source: 'static', entries: { only: 'only-password' } },
    });
    try {
      for (const res of [
        await t.api.get('/clients-auth', asAdmin),
        await t.api.post('/clients-auth', { id: 'x-id', password: 'password-1' }, asAdmin),
        await t.api.delete('/clients-auth/only', asAdmin),
      ]) {
        expect(res.status).toBe(400);
        expect(res.json.errors[0].code).toBe('ERR_CLIENT_AUTH_SINGLE');
        expect(res.json.errors[0].detail).toMatch(/auth_file or auth_table/);
      }
    } finally {
      await t.stop();
    }
  });

  test('no source at all answers 400 naming the keys', async () => {
    const t = await startTestServer({ store: 'file' });
    try {
      const res = await t.api.get('/clients-auth', asAdmin);
      expect(res.status).toBe(400);
      expect(res.json.errors[0].code).toBe('ERR_CLIENT_AUTH_NOT_CONFIGURED');
    } finally {
      await t.stop();
    }
  });
});
