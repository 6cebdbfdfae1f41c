import { afterEach, describe, expect, test } from 'vitest';
import { ADMIN, OPERATOR, startTestServer, type TestServer } from '../../../../test-support/server.js';

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
});
