import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ADMIN, ALL_STORES, startTestServer, type TestServer } from '../../../../test-support/server.js';

function decodePayload(token: string): Record<string, unknown> {
  const part = token.split('.')[1] ?? '';
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
}

async function waitForStatus(
  check: () => Promise<number>,
  wanted: number,
  withinMs: number,
): Promise<number> {
  const deadline = Date.now() + withinMs;
  let last = await check();
  while (last !== wanted && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    last = await check();
  }
  return last;
}

describe.each(ALL_STORES)('authentication with the %s user store', (store) => {
  let t: TestServer;
  /** A token of one second's lifetime, issued first so that it runs out while the other tests run. */
  let shortLived: { token: string; statusWhenNew: number };
  beforeAll(async () => {
    t = await startTestServer({ store });
    const token = await t.api.login(ADMIN.username, ADMIN.password, 1);
    shortLived = { token, statusWhenNew: (await t.api.get('/status', { auth: { bearer: token } })).status };
  });
  afterAll(() => t?.stop());

  test('GET /login with Basic credentials returns a token and no two_fa', async () => {
    const res = await t.api.get('/login', { auth: { basic: [ADMIN.username, ADMIN.password] } });
    expect(res.status).toBe(200);
    expect(res.json.data.two_fa).toBeNull();
    expect(res.json.data.token.split('.')).toHaveLength(3);
  });

  test('a wrong password is 401 with a stable code', async () => {
    const res = await t.api.get('/login', { auth: { basic: [ADMIN.username, 'wrong-password'] } });
    expect(res.status).toBe(401);
    expect(res.json.errors[0].code).toBe('ERR_BAD_CREDENTIALS');
  });

  test('an unknown user is 401', async () => {
    const res = await t.api.get('/status', { auth: { basic: ['nobody', 'whatever-password'] } });
    expect(res.status).toBe(401);
  });

  test('no credentials is 401 on /login and on /status', async () => {
    for (const path of ['/login', '/status']) {
      const res = await t.api.get(path);
      expect(res.status).toBe(401);
      expect(res.json.errors[0].code).toBe('ERR_AUTH_REQUIRED');
    }
  });

  test('a malformed Authorization header is 401, not 500', async () => {
    for (const header of ['Basic', 'Basic bm9jb2xvbg==', 'Digest abc', 'Bearer']) {
      const res = await t.api.get('/status', { auth: { header } });
      expect(res.status, header).toBe(401);
    }
  });

  test('Basic and Bearer both authenticate /status', async () => {
    const basic = await t.api.get('/status', { auth: { basic: [ADMIN.username, ADMIN.password] } });
    expect(basic.status).toBe(200);
    const token = await t.api.login(ADMIN.username, ADMIN.password);
    const bearer = await t.api.get('/status', { auth: { bearer: token } });
    expect(bearer.status).toBe(200);
    // The same answer, but for the clock: the uptime may have moved on a second between the two requests.
    const { uptime_sec: basicUptime, ...basicRest } = basic.json.data as Record<string, unknown>;
    const { uptime_sec: bearerUptime, ...bearerRest } = bearer.json.data as Record<string, unknown>;
    expect(bearerRest).toEqual(basicRest);
    expect(Number(bearerUptime)).toBeGreaterThanOrEqual(Number(basicUptime));
  });

  test('token-lifetime sets the expiry; the default is 600 s', async () => {
    // Whole seconds: the end is rounded up, so the token lives the lifetime asked for, plus under a second.
    const before = Date.now();
    const custom = decodePayload(await t.api.login(ADMIN.username, ADMIN.password, 1234));
    expect(Number(custom.exp) * 1000).toBeGreaterThanOrEqual(before + 1234_000);
    expect(Number(custom.exp) - Number(custom.iat)).toBeGreaterThanOrEqual(1234);
    expect(Number(custom.exp) - Number(custom.iat)).toBeLessThanOrEqual(1235);
    const standard = decodePayload(await t.api.login(ADMIN.username, ADMIN.password));
    expect(Number(standard.exp) - Number(standard.iat)).toBeGreaterThanOrEqual(600);
    expect(Number(standard.exp) - Number(standard.iat)).toBeLessThanOrEqual(601);
  });

  test('bad token-lifetime values are 400', async () => {
    for (const value of ['abc', '0', '-5', '1.5', String(366 * 24 * 3600)]) {
      const res = await t.api.get(`/login?token-lifetime=${value}`, {
        auth: { basic: [ADMIN.username, ADMIN.password] },
      });
      expect(res.status, value).toBe(400);
      expect(res.json.errors[0].title).toMatch(/token-lifetime/);
    }
  });

  test('a tampered token is 401, not 500', async () => {
    const token = await t.api.login(ADMIN.username, ADMIN.password);
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const forgedPayload = Buffer.from(
      JSON.stringify({ ...decodePayload(token), sub: 'someone-else' }),
    ).toString('base64url');
    const noneHeader = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    const flipped = signature.slice(0, -2) + (signature.endsWith('AA') ? 'BB' : 'AA');
    for (const bad of [
      `${header}.${payload}.${flipped}`,
      `${header}.${forgedPayload}.${signature}`,
      `${noneHeader}.${payload}.`,
      'not-a-jwt',
      `${header}.${payload}`,
    ]) {
      const res = await t.api.get('/status', { auth: { bearer: bad } });
      expect(res.status, bad).toBe(401);
      expect(res.json.errors[0].code).toBe('ERR_BAD_TOKEN');
    }
  });

  test('logout revokes the token', async () => {
    const token = await t.api.login(ADMIN.username, ADMIN.password);
    expect((await t.api.get('/status', { auth: { bearer: token } })).status).toBe(200);
    const out = await t.api.delete('/logout', { auth: { bearer: token } });
    expect(out.status).toBe(204);
    expect((await t.api.get('/status', { auth: { bearer: token } })).status).toBe(401);
    expect((await t.api.delete('/logout', { auth: { bearer: token } })).status).toBe(401);
  });

  test('logout with Basic credentials is 400 (there is no token to revoke)', async () => {
    const res = await t.api.delete('/logout', { auth: { basic: [ADMIN.username, ADMIN.password] } });
    expect(res.status).toBe(400);
  });

  // Last, so that the short-lived token has had the other tests' time to run out.
  test('an expired token is rejected with 401', async () => {
    expect(shortLived.statusWhenNew).toBe(200);
    const check = async () => (await t.api.get('/status', { auth: { bearer: shortLived.token } })).status;
    expect(await waitForStatus(check, 401, 4000)).toBe(401);
  });
});
