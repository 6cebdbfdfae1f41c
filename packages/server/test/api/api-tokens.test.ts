import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import {
  ADMIN,
  OPERATOR,
  startTestServer,
  type StoreKind,
  type TestServer,
} from '../../../../test-support/server.js';
import { WebSocket } from 'ws';
import { basicHeader } from '../../../../test-support/api-client.js';
import { openDatabase } from '../../src/storage/database.js';
import { SqlApiTokenRepository } from '../../src/storage/api-token-repository.js';

const basic = (username: string, password: string) => ({
  auth: { basic: [username, password] as [string, string] },
});
const asAdmin = basic(ADMIN.username, ADMIN.password);
const asOperator = basic(OPERATOR.username, OPERATOR.password);
const TOKEN_SHAPE = /^([A-Za-z0-9]{8})_[A-Za-z0-9_-]{43}$/;
const inOneHour = () => new Date(Date.now() + 3600_000).toISOString();

/** 101 when the socket opened (then closed again), else the HTTP status of the refusal. */
function upgradeStatus(url: string, authorization: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { authorization } });
    ws.once('open', () => {
      ws.close();
      resolve(101);
    });
    ws.once('unexpected-response', (_req, res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    ws.once('error', reject);
  });
}

/** API tokens live in svcd's database whatever the user store, the static user and the user file included. */
const STORES: StoreKind[] = ['static', 'file', 'database:sqlite', 'database:postgres'];

describe.each(STORES)('personal API tokens with the %s user store', (store) => {
  let t: TestServer;
  beforeEach(async () => {
    t = await startTestServer({
      store,
      clientAuth: { source: 'file', entries: { 'client-1': 'client-password-1' } },
    });
  });
  afterEach(() => t?.stop());

  const createToken = async (body: object, as = asAdmin) => {
    const res = await t.api.post('/me/tokens', body, as);
    expect(res.status, res.text).toBe(201);
    return res.json.data as { prefix: string; token: string; name: string; scope: string };
  };

  test('POST shows the token once; GET lists it without secret; it works as the Basic password at once', async () => {
    const expiresAt = '2099-12-31T23:59:59Z';
    const res = await t.api.post('/me/tokens', { name: 'ci', scope: 'read', expires_at: expiresAt }, asAdmin);
    expect(res.status).toBe(201);
    const created = res.json.data;
    expect(created.token).toMatch(TOKEN_SHAPE);
    expect(created.token.slice(0, 8)).toBe(created.prefix);
    expect(created).toEqual({
      prefix: created.prefix,
      name: 'ci',
      scope: 'read',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      expires_at: expiresAt,
      last_used_at: null,
      token: created.token,
    });

    const list = await t.api.get('/me/tokens', asAdmin);
    expect(list.status).toBe(200);
    const { token: _shownOnce, ...item } = created;
    expect(list.json).toEqual({ data: [item], meta: { count: 1 } });
    expect(list.text).not.toContain(created.token.slice(9));

    const status = await t.api.get('/status', basic(ADMIN.username, created.token));
    expect(status.status).toBe(200);
    // Its use is stored (at most once a minute, see token-use-stamps.test.ts).
    const used = (await t.api.get('/me/tokens', asAdmin)).json.data[0].last_used_at as string;
    expect(Date.now() - Date.parse(used)).toBeLessThan(60_000);
    expect(status.json.data.fingerprint).toBeTruthy();
    // Tokens are per user: another user's list is empty.
    if (store !== 'static') expect((await t.api.get('/me/tokens', asOperator)).json.data).toEqual([]);
  });

  test('a read token may GET but not write (403, nothing written) nor open a WebSocket', async () => {
    const { token } = await createToken({ name: 'reader', scope: 'read' });
    const asToken = basic(ADMIN.username, token);
    expect((await t.api.get('/me/tokens', asToken)).status).toBe(200);
    expect((await t.api.get('/clients-auth', asToken)).status).toBe(200);

    const refused = await t.api.post('/me/tokens', { name: 'more', scope: 'read+write' }, asToken);
    expect(refused.status).toBe(403);
    expect(refused.json.errors[0]).toEqual({
      code: 'ERR_API_TOKEN_SCOPE',
      title: "The API token's scope 'read' does not allow POST /api/v1/me/tokens",
      detail: 'a read token allows GET requests only (no WebSockets); use a read+write token',
    });
    const write = await t.api.post('/clients-auth', { id: 'by-token', password: 'password-123' }, asToken);
    expect(write.status).toBe(403);
    expect((await t.api.get('/me/tokens', asAdmin)).json.data.map((x: { name: string }) => x.name)).toEqual([
      'reader',
    ]);
    expect((await t.api.get('/clients-auth?filter[id]=by-token', asAdmin)).json.data).toEqual([]);

    const wsUrl = `${t.server.apiUrl?.replace(/^http/, 'ws')}/ws/commands`;
    const authorization = basicHeader(ADMIN.username, token);
    expect(await upgradeStatus(wsUrl, authorization)).toBe(403);
    const rw = await createToken({ name: 'socket', scope: 'read+write' });
    expect(await upgradeStatus(wsUrl, basicHeader(ADMIN.username, rw.token))).toBe(101);
  });

  test('a read+write token may write; a clients-auth token only reaches /clients-auth', async () => {
    const rw = await createToken({ name: 'writer', scope: 'read+write' });
    const made = await t.api.post(
      '/me/tokens',
      { name: 'from-token', scope: 'read' },
      basic(ADMIN.username, rw.token),
    );
    expect(made.status).toBe(201);

    const ca = await createToken({ name: 'credentials', scope: 'clients-auth' });
    const asCa = basic(ADMIN.username, ca.token);
    expect((await t.api.get('/clients-auth', asCa)).status).toBe(200);
    const created = await t.api.post('/clients-auth', { id: 'via-ca-token', password: 'password-123' }, asCa);
    expect(created.status).toBe(201);
    expect((await t.api.delete('/clients-auth/via-ca-token', asCa)).status).toBe(204);
    for (const [method, path] of [
      ['GET', '/status'],
      ['GET', '/clients'],
      ['GET', '/me/tokens'],
    ] as const) {
      const res = await t.api.request(method, path, asCa);
      expect(res.status, path).toBe(403);
      expect(res.json.errors[0].code).toBe('ERR_API_TOKEN_SCOPE');
    }
  });

  test('an expired token is 401; a wrong secret, another user or /login refuse it with 401', async () => {
    const { prefix, token } = await createToken({ name: 'short', scope: 'read+write' });
    expect((await t.api.get('/status', basic(ADMIN.username, token))).status).toBe(200);

    const wrongSecret = `${prefix}_${'A'.repeat(43)}`;
    const wrong = await t.api.get('/status', basic(ADMIN.username, wrongSecret));
    expect(wrong.status).toBe(401);
    expect(wrong.json.errors[0].code).toBe('ERR_BAD_CREDENTIALS');
    expect((await t.api.get('/status', basic(OPERATOR.username, token))).status).toBe(401);
    // A token is not a password: it cannot get a JWT.
    expect((await t.api.get('/login', basic(ADMIN.username, token))).status).toBe(401);

    // Expire it in the database, as time would.
    const database = await openDatabase(t.config.database, { dataDir: t.dataDir });
    try {
      const repo = new SqlApiTokenRepository(database);
      const past = new Date(Date.now() - 1000);
      expect(await repo.update(ADMIN.username, prefix, { expiresAt: past })).toBeDefined();
    } finally {
      await database.close();
    }
    const expired = await t.api.get('/status', basic(ADMIN.username, token));
    expect(expired.status).toBe(401);
    expect(expired.json.errors[0]).toMatchObject({
      code: 'ERR_API_TOKEN_EXPIRED',
      title: `The API token '${prefix}' has expired`,
    });
    // The owner extends it; it works again at once.
    const extended = await t.api.put(`/me/tokens/${prefix}`, { expires_at: inOneHour() }, asAdmin);
    expect(extended.status).toBe(200);
    expect((await t.api.get('/status', basic(ADMIN.username, token))).status).toBe(200);
  });

  test('PUT renames and extends; DELETE revokes at once; unknown prefix 404; bad bodies 400', async () => {
    const one = await createToken({ name: 'one', scope: 'read' });
    await createToken({ name: 'two', scope: 'read' });
    const renamed = await t.api.put(`/me/tokens/${one.prefix}`, { name: 'uno' }, asAdmin);
    expect(renamed.status).toBe(200);
    expect(renamed.json.data).toMatchObject({ prefix: one.prefix, name: 'uno', scope: 'read' });
    expect(renamed.json.data.token).toBeUndefined();

    const clash = await t.api.put(`/me/tokens/${one.prefix}`, { name: 'two' }, asAdmin);
    expect(clash.status).toBe(409);
    expect(clash.json.errors[0].code).toBe('ERR_API_TOKEN_EXISTS');
    expect((await t.api.post('/me/tokens', { name: 'two', scope: 'read' }, asAdmin)).status).toBe(409);

    for (const [body, problem] of [
      [{}, 'Nothing to change'],
      [{ expires_at: '2001-01-01T00:00:00Z' }, 'expires_at: must be in the future'],
      [{ expires_at: 'tomorrow' }, 'expires_at: must be an RFC 3339'],
      [{ name: '' }, 'name: must not be empty'],
      [{ scope: 'read+write' }, "unknown field 'scope'"],
    ] as const) {
      const bad = await t.api.put(`/me/tokens/${one.prefix}`, body, asAdmin);
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(bad.json.errors[0].title).toContain(problem);
    }
    for (const [body, problem] of [
      [{ name: 'x', scope: 'admin' }, 'scope: must be one of "read", "read+write", "clients-auth"'],
      [{ scope: 'read' }, 'name:'],
      [{ name: 'x'.repeat(251), scope: 'read' }, 'name: must be at most 250 characters'],
      [{ name: 'x', scope: 'read', expires_at: '2001-01-01T00:00:00Z' }, 'expires_at: must be in the future'],
    ] as const) {
      const bad = await t.api.post('/me/tokens', body, asAdmin);
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(bad.json.errors[0].title).toContain(problem);
    }

    expect((await t.api.put('/me/tokens/nosuch12', { name: 'z' }, asAdmin)).status).toBe(404);
    expect((await t.api.delete(`/me/tokens/${one.prefix}`, asAdmin)).status).toBe(204);
    const gone = await t.api.delete(`/me/tokens/${one.prefix}`, asAdmin);
    expect(gone.status).toBe(404);
    expect(gone.json.errors[0].code).toBe('ERR_API_TOKEN_NOT_FOUND');
    expect((await t.api.get('/status', basic(ADMIN.username, one.token))).status).toBe(401);
  });

  test('the legacy /me/token answers 410 Gone pointing to /me/tokens', async () => {
    for (const [method, path] of [
      ['GET', '/me/token'],
      ['POST', '/me/token'],
      ['PUT', '/me/token/abc'],
      ['DELETE', '/me/token/abc'],
    ] as const) {
      const res = await t.api.request(method, path, asAdmin);
      expect(res.status, `${method} ${path}`).toBe(410);
      expect(res.json.errors[0]).toMatchObject({
        code: 'ERR_GONE',
        title: 'use new token management on /me/tokens',
      });
    }
  });
});

describe.each(['file', 'database:sqlite'] as StoreKind[])('API tokens and users (%s store)', (store) => {
  let t: TestServer;
  beforeEach(async () => {
    t = await startTestServer({ store });
  });
  afterEach(() => t?.stop());

  test('only Administrators may create clients-auth tokens; other scopes are for everyone', async () => {
    const refused = await t.api.post('/me/tokens', { name: 'ca', scope: 'clients-auth' }, asOperator);
    expect(refused.status).toBe(403);
    expect(refused.json.errors[0].code).toBe('ERR_ADMIN_REQUIRED');
    expect((await t.api.get('/me/tokens', asOperator)).json.data).toEqual([]);
    const own = await t.api.post('/me/tokens', { name: 'mine', scope: 'read+write' }, asOperator);
    expect(own.status).toBe(201);
    // The token carries the user's own rights, not more.
    const users = await t.api.get('/users', basic(OPERATOR.username, own.json.data.token));
    expect(users.status).toBe(403);
    expect(users.json.errors[0].code).toBe('ERR_ADMIN_REQUIRED');
  });

  test("deleting a user removes the user's tokens: a new user of that name does not inherit them", async () => {
    const own = await t.api.post('/me/tokens', { name: 'mine', scope: 'read' }, asOperator);
    const token = own.json.data.token as string;
    expect((await t.api.delete(`/users/${OPERATOR.username}`, asAdmin)).status).toBeLessThan(300);
    const again = { username: OPERATOR.username, password: 'another-password-1', groups: ['Operators'] };
    expect((await t.api.post('/users', again, asAdmin)).status).toBe(201);
    if (store === 'file') await t.server.reloadUsers();
    expect((await t.api.get('/status', basic(OPERATOR.username, again.password))).status).toBe(200);
    expect((await t.api.get('/status', basic(OPERATOR.username, token))).status).toBe(401);
  });
});
