import { afterEach, describe, expect, test } from 'vitest';
import { ADMIN, OPERATOR, startTestServer, type TestServer } from '../../../../test-support/server.js';
import { rawRequest } from '../../../../test-support/raw-http.js';

const basic = (u: string, p: string) => ({ auth: { basic: [u, p] as [string, string] } });

describe('brute-force protection', () => {
  let t: TestServer | undefined;
  afterEach(() => t?.stop());

  test('after a failed login the same username is refused with 429 for user_login_wait', async () => {
    t = await startTestServer({ store: 'file', api: { user_login_wait: '1s', max_failed_login: 0 } });
    expect((await t.api.get('/login', basic(ADMIN.username, 'wrong'))).status).toBe(401);
    const throttled = await t.api.get('/login', basic(ADMIN.username, ADMIN.password));
    expect(throttled.status).toBe(429);
    expect(throttled.json.errors[0].code).toBe('ERR_LOGIN_THROTTLED');
    // Another username is not affected.
    expect((await t.api.get('/login', basic(OPERATOR.username, OPERATOR.password))).status).toBe(200);
    // Once the wait is over, the right password works again.
    const deadline = Date.now() + 5000;
    let status = 429;
    while (status === 429 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await t.api.get('/login', basic(ADMIN.username, ADMIN.password))).status;
    }
    expect(status).toBe(200);
  });

  test('max_failed_login consecutive failures ban the IP with 423, even for right credentials', async () => {
    t = await startTestServer({
      store: 'file',
      api: { max_failed_login: 3, ban_time: '1h', user_login_wait: 0 },
    });
    for (const name of ['u1', 'u2', 'u3']) {
      expect((await t.api.get('/status', basic(name, 'wrong-password'))).status).toBe(401);
    }
    const banned = await t.api.get('/login', basic(ADMIN.username, ADMIN.password));
    expect(banned.status).toBe(423);
    expect(banned.json.errors[0].code).toBe('ERR_IP_BANNED');
  });

  test('a successful login resets the failure count', async () => {
    t = await startTestServer({
      store: 'file',
      api: { max_failed_login: 3, ban_time: '1h', user_login_wait: 0 },
    });
    for (let round = 0; round < 3; round++) {
      expect((await t.api.get('/status', basic('nobody', 'wrong-password'))).status).toBe(401);
      expect((await t.api.get('/status', basic('nobody', 'wrong-password'))).status).toBe(401);
      expect((await t.api.get('/status', basic(ADMIN.username, ADMIN.password))).status).toBe(200);
    }
  });

  test('a password of 72 right bytes and more is refused exactly like a wrong one (bcrypt reads 72)', async () => {
    const password = 'p'.repeat(62) + '0123456789'; // 72 bytes
    expect(Buffer.byteLength(password)).toBe(72);
    t = await startTestServer({
      store: 'file',
      users: [{ username: 'long', password, groups: ['Administrators'] }],
      api: { max_failed_login: 2, ban_time: '1h', user_login_wait: 0 },
    });
    expect((await t.api.get('/login', basic('long', password))).status).toBe(200);
    const wrong = await t.api.get('/login', basic('long', 'wrong-password'));
    expect((await t.api.get('/login', basic('long', password))).status).toBe(200); // resets the count
    const overlong = await t.api.get('/login', basic('long', password + 'x'));
    expect(overlong.status).toBe(401);
    expect(overlong.json).toEqual(wrong.json);
    expect((await t.api.get('/status', basic('long', password + 'é'))).status).toBe(401);
    // Both over-long attempts counted as failed logins: the IP is banned now.
    expect((await t.api.get('/login', basic('long', password))).status).toBe(423);
  });

  test('a guesser from changing addresses locks out neither API tokens, nor a JWT, nor the usual address', async () => {
    t = await startTestServer({ store: 'file', api: { user_login_wait: '2s' } });
    const asAdmin = basic(ADMIN.username, ADMIN.password);
    // The user's usual address (127.0.0.1) has logged in; it holds a JWT and an API token.
    const jwt = (await t.api.get('/login', asAdmin)).json.data.token as string;
    const created = await t.api.post('/me/tokens', { name: 'ci', scope: 'read+write' }, asAdmin);
    expect(created.status, created.text).toBe(201);
    const apiToken = created.json.data.token as string;
    const port = Number(new URL(t.server.apiUrl!).port);
    const get = (path: string, authorization: string, localAddress?: string) =>
      rawRequest(
        port,
        `GET /api/v1${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nConnection: close\r\n\r\n`,
        localAddress ? { localAddress } : {},
      );
    const basicHeader = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

    const guesses: number[] = [];
    const withToken: number[] = [];
    const withJwt: number[] = [];
    for (let i = 0; i < 40; i++) {
      guesses.push(
        (await get('/login', basicHeader(ADMIN.username, `guess-${i}`), `127.0.1.${i + 1}`)).status,
      );
      withToken.push((await get('/status', basicHeader(ADMIN.username, apiToken))).status);
      withJwt.push((await get('/status', `Bearer ${jwt}`)).status);
    }
    expect(withToken).toEqual(Array(40).fill(200));
    expect(withJwt).toEqual(Array(40).fill(200));
    // 30 wrong guesses at one user within 15 minutes; then new addresses are refused for this user.
    expect(guesses.slice(0, 30)).toEqual(Array(30).fill(401));
    expect(guesses.slice(30)).toEqual(Array(10).fill(429));
    // The usual address still logs in with the password; a new one does not.
    expect((await get('/login', basicHeader(ADMIN.username, ADMIN.password))).status).toBe(200);
    expect((await get('/login', basicHeader(ADMIN.username, ADMIN.password), '127.0.2.1')).status).toBe(429);
  });
});
