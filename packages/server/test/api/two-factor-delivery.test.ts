import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { codeIn, startPushoverReceiver, startSmtpReceiver } from '../../../../test-support/code-receivers.js';
import { ADMIN, startTestServer, type StoreKind, type TestServer } from '../../../../test-support/server.js';
import { svcdConfigSchema } from '../../src/config/schema.js';
import { resolveConfigPaths } from '../../src/cli/resolve-paths.js';
import { startServer } from '../../src/server.js';

const ALICE = { username: 'alice', password: 'alice-secret-1', groups: ['Operators'] };
const basic = (u: { username: string; password: string }) => ({
  auth: { basic: [u.username, u.password] as [string, string] },
});
const bearer = (token: string) => ({ auth: { bearer: token } });
const errorCode = (res: { json: { errors: { code: string }[] } }) => res.json.errors[0]?.code;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each<StoreKind>(['file', 'database:sqlite', 'database:postgres'])(
  'two-factor login by e-mail (SMTP) with the %s store',
  (store) => {
    let smtp: Awaited<ReturnType<typeof startSmtpReceiver>>;
    let t: TestServer;
    beforeAll(async () => {
      smtp = await startSmtpReceiver();
      t = await startTestServer({
        store,
        users: [
          { ...ADMIN, twoFaSendTo: 'admin@example.com' },
          { ...ALICE, twoFaSendTo: 'alice@example.com' },
          { username: 'nomail', password: 'nomail-secret-1', groups: [] },
        ],
        api: { two_fa_token_delivery: 'smtp' },
        sections: { smtp: { server: smtp.address, sender_email: 'svcd@example.com' } },
      });
    });
    afterAll(async () => {
      await t?.stop();
      await smtp?.close();
    });

    const startLogin = async (user: { username: string; password: string } = ALICE) => {
      const res = await t.api.get('/login', basic(user));
      expect(res.status).toBe(200);
      const mail = await smtp.inbox.next();
      return { loginToken: res.json.data.token as string, res, mail, code: codeIn(mail.raw) };
    };

    test('GET /login sends the code by mail and returns a login token; the code gives the auth token', async () => {
      const { loginToken, res, mail, code } = await startLogin();
      expect(res.json.data.two_fa).toEqual({
        send_to: 'alice@example.com',
        delivery_method: 'email',
        totp_key_status: '',
      });
      expect(mail.from).toBe('svcd@example.com');
      expect(mail.to).toEqual(['alice@example.com']);
      expect(mail.raw).toMatch(/valid for 10 minutes/);
      // The login token is good for /verify-2fa only.
      const status = await t.api.get('/status', bearer(loginToken));
      expect(status.status).toBe(401);
      expect(errorCode(status)).toBe('ERR_LOGIN_TOKEN_ONLY');
      const wrong = await t.api.post(
        '/verify-2fa',
        { username: 'alice', token: code === '000000' ? '000001' : '000000' },
        bearer(loginToken),
      );
      expect(wrong.status).toBe(401);
      expect(errorCode(wrong)).toBe('ERR_TWO_FA_CODE_WRONG');
      const verified = await t.api.post(
        '/verify-2fa',
        { username: 'alice', token: code },
        bearer(loginToken),
      );
      expect(verified.status).toBe(200);
      expect(verified.json.data.two_fa).toBeNull();
      const authToken = verified.json.data.token as string;
      expect((await t.api.get('/status', bearer(authToken))).status).toBe(200);
      // The auth token cannot call /verify-2fa; the code and the login token are spent.
      const again = await t.api.post('/verify-2fa', { username: 'alice', token: code }, bearer(authToken));
      expect(again.status).toBe(401);
      expect(errorCode(again)).toBe('ERR_LOGIN_TOKEN_REQUIRED');
      const replay = await t.api.post('/verify-2fa', { username: 'alice', token: code }, bearer(loginToken));
      expect(replay.status).toBe(401);
    });

    test('a password in HTTP Basic works only on /login', async () => {
      const res = await t.api.get('/status', basic(ALICE));
      expect(res.status).toBe(401);
      expect(errorCode(res)).toBe('ERR_SECOND_FACTOR_REQUIRED');
    });

    test('a code from another login does not complete this one; the username must be the token’s', async () => {
      const first = await startLogin();
      const second = await startLogin();
      if (first.code !== second.code) {
        const crossed = await t.api.post(
          '/verify-2fa',
          { username: 'alice', token: first.code },
          bearer(second.loginToken),
        );
        expect(crossed.status).toBe(401);
      }
      const otherName = await t.api.post(
        '/verify-2fa',
        { username: 'admin', token: second.code },
        bearer(second.loginToken),
      );
      expect(otherName.status).toBe(401);
      expect(
        (
          await t.api.post(
            '/verify-2fa',
            { username: 'alice', token: second.code },
            bearer(second.loginToken),
          )
        ).status,
      ).toBe(200);
    });

    test('five wrong codes end the login: then even the right code is refused', async () => {
      const { loginToken, code } = await startLogin();
      const wrongCode = code === '123456' ? '654321' : '123456';
      for (let i = 0; i < 5; i += 1) {
        const res = await t.api.post(
          '/verify-2fa',
          { username: 'alice', token: wrongCode },
          bearer(loginToken),
        );
        expect(res.status).toBe(401);
      }
      const late = await t.api.post('/verify-2fa', { username: 'alice', token: code }, bearer(loginToken));
      expect(late.status).toBe(401);
      expect(errorCode(late)).toBe('ERR_TWO_FA_TOO_MANY_ATTEMPTS');
    });

    test('a user without two_fa_send_to cannot log in and is told why; no mail goes out', async () => {
      const res = await t.api.get('/login', basic({ username: 'nomail', password: 'nomail-secret-1' }));
      expect(res.status).toBe(400);
      expect(errorCode(res)).toBe('ERR_TWO_FA_SEND_TO_MISSING');
      expect(smtp.inbox.size).toBe(0);
    });

    test('the user API requires a valid e-mail address as two_fa_send_to', async () => {
      const { loginToken, code } = await startLogin(ADMIN);
      const token = (await t.api.post('/verify-2fa', { username: 'admin', token: code }, bearer(loginToken)))
        .json.data.token as string;
      const missing = await t.api.post(
        '/users',
        { username: 'carol', password: 'carol-secret-1' },
        bearer(token),
      );
      expect(missing.status).toBe(400);
      expect(missing.json.errors[0].title).toMatch(/two_fa_send_to must not be empty/);
      const bad = await t.api.post(
        '/users',
        { username: 'carol', password: 'carol-secret-1', two_fa_send_to: 'not-mail' },
        bearer(token),
      );
      expect(bad.status).toBe(400);
      expect(errorCode(bad)).toBe('ERR_TWO_FA_SEND_TO_INVALID');
      const good = await t.api.post(
        '/users',
        { username: 'carol', password: 'carol-secret-1', two_fa_send_to: 'carol@example.com' },
        bearer(token),
      );
      expect(good.status).toBe(201);
      const badChange = await t.api.put('/users/carol', { two_fa_send_to: 'x@' }, bearer(token));
      expect(badChange.status).toBe(400);
    });

    test('PUT /me applies the same rule to the caller: an invalid or empty two_fa_send_to is 400, a valid one is kept', async () => {
      const { loginToken, code } = await startLogin(ADMIN);
      const token = (await t.api.post('/verify-2fa', { username: 'admin', token: code }, bearer(loginToken)))
        .json.data.token as string;
      for (const value of ['not-mail', '']) {
        const bad = await t.api.put('/me', { two_fa_send_to: value }, bearer(token));
        expect(bad.status).toBe(400);
        expect(errorCode(bad)).toBe('ERR_TWO_FA_SEND_TO_INVALID');
      }
      expect((await t.api.get('/me', bearer(token))).json.data.two_fa_send_to).toBe('admin@example.com');
      const good = await t.api.put('/me', { two_fa_send_to: 'root@example.com' }, bearer(token));
      expect(good.status).toBe(store === 'file' ? 200 : 204);
      if (store === 'file') await t.server.reloadUsers();
      expect((await t.api.get('/me', bearer(token))).json.data.two_fa_send_to).toBe('root@example.com');
    });
  },
);

describe('two-factor login through an executable', () => {
  let dir: string;
  let t: TestServer;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svcd-2fa-exec-'));
    const script = join(dir, 'send-code.sh');
    await writeFile(
      script,
      [
        '#!/bin/sh',
        'if [ "$SVC_2FA_SENDTO" = "fail@example.com" ]; then echo "no route" >&2; exit 3; fi',
        `env > "${join(dir, 'env.txt')}"`,
        `printf '%s' "Your svc login code is $SVC_2FA_TOKEN" > "${join(dir, 'code.txt')}"`,
      ].join('\n'),
    );
    await chmod(script, 0o700);
    process.env.SVC_AUTH = 'must-not-leak';
    t = await startTestServer({
      store: 'file',
      users: [
        { ...ADMIN, twoFaSendTo: 'admin@example.com' },
        { ...ALICE, twoFaSendTo: 'alice@example.com' },
        { username: 'failing', password: 'failing-secret-1', groups: [], twoFaSendTo: 'fail@example.com' },
        { username: 'odd', password: 'odd-secret-1', groups: [], twoFaSendTo: 'odd@elsewhere.org' },
      ],
      api: {
        two_fa_token_delivery: script,
        two_fa_token_ttl_seconds: 2,
        two_fa_send_to_type: 'regex',
        two_fa_send_to_regex: '^[a-z]+@example\\.com$',
      },
    });
  });
  afterAll(async () => {
    delete process.env.SVC_AUTH;
    await t?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('the program gets the code, recipient and validity in its environment, and nothing else of svcd', async () => {
    const res = await t.api.get('/login', basic(ALICE));
    expect(res.status).toBe(200);
    expect(res.json.data.two_fa).toEqual({
      send_to: 'alice@example.com',
      delivery_method: 'script',
      totp_key_status: '',
    });
    const code = codeIn(await readFile(join(dir, 'code.txt'), 'utf8'));
    const env = await readFile(join(dir, 'env.txt'), 'utf8');
    expect(env).toContain(`SVC_2FA_TOKEN=${code}`);
    expect(env).toContain('SVC_2FA_SENDTO=alice@example.com');
    expect(env).toContain('SVC_2FA_TOKEN_TTL=2');
    expect(env).not.toContain('must-not-leak');
    const verified = await t.api.post(
      '/verify-2fa',
      { username: 'alice', token: code },
      bearer(res.json.data.token),
    );
    expect(verified.status).toBe(200);
  });

  test('a non-zero exit fails the login with a clear error, and the login token is void', async () => {
    const res = await t.api.get('/login', basic({ username: 'failing', password: 'failing-secret-1' }));
    expect(res.status).toBe(503);
    expect(errorCode(res)).toBe('ERR_TWO_FA_DELIVERY_FAILED');
    expect(res.json.errors[0].detail).toMatch(/exited with code 3/);
  });

  test('two_fa_send_to_type regex: a value outside the pattern cannot log in', async () => {
    const res = await t.api.get('/login', basic({ username: 'odd', password: 'odd-secret-1' }));
    expect(res.status).toBe(400);
    expect(errorCode(res)).toBe('ERR_TWO_FA_SEND_TO_INVALID');
  });

  test('an expired code is refused even when right', async () => {
    const res = await t.api.get('/login', basic(ALICE));
    const code = codeIn(await readFile(join(dir, 'code.txt'), 'utf8'));
    await sleep(2100); // two_fa_token_ttl_seconds = 2
    const late = await t.api.post(
      '/verify-2fa',
      { username: 'alice', token: code },
      bearer(res.json.data.token),
    );
    expect(late.status).toBe(401);
    expect(errorCode(late)).toBe('ERR_TWO_FA_CODE_EXPIRED');
  });
});

describe('two-factor login through Pushover', () => {
  let pushover: Awaited<ReturnType<typeof startPushoverReceiver>>;
  let t: TestServer;
  const KEY = 'u'.repeat(30);
  beforeAll(async () => {
    pushover = await startPushoverReceiver();
    t = await startTestServer({
      store: 'database:sqlite',
      users: [
        { ...ADMIN, twoFaSendTo: 'a'.repeat(30) },
        { ...ALICE, twoFaSendTo: KEY },
        {
          username: 'refused',
          password: 'refused-secret-1',
          groups: [],
          twoFaSendTo: `refused${'x'.repeat(23)}`,
        },
      ],
      api: { two_fa_token_delivery: 'pushover', totp_login_session_ttl: '1s' },
      sections: { pushover: { api_token: 'app-token-1', url: pushover.url } },
    });
  });
  afterAll(async () => {
    await t?.stop();
    await pushover?.close();
  });

  test('the code goes to the user key with the app token; the login works', async () => {
    const res = await t.api.get('/login', basic(ALICE));
    expect(res.status).toBe(200);
    expect(res.json.data.two_fa).toEqual({ send_to: KEY, delivery_method: 'pushover', totp_key_status: '' });
    const message = await pushover.inbox.next();
    expect(message).toMatchObject({ token: 'app-token-1', user: KEY, ttl: '600' });
    const verified = await t.api.post(
      '/verify-2fa',
      { username: 'alice', token: codeIn(message.message) },
      bearer(res.json.data.token),
    );
    expect(verified.status).toBe(200);
  });

  test('Pushover refusing the message fails the login with its reason', async () => {
    const res = await t.api.get('/login', basic({ username: 'refused', password: 'refused-secret-1' }));
    expect(res.status).toBe(503);
    expect(res.json.errors[0].detail).toMatch(/HTTP 400: user identifier is invalid/);
  });

  test('after the login session lifetime /verify-2fa is refused even with the right code', async () => {
    const res = await t.api.get('/login', basic(ALICE));
    const code = codeIn((await pushover.inbox.next()).message);
    await sleep(2100); // totp_login_session_ttl = 1s, rounded up to whole seconds in the token
    const late = await t.api.post(
      '/verify-2fa',
      { username: 'alice', token: code },
      bearer(res.json.data.token),
    );
    expect(late.status).toBe(401);
    expect(errorCode(late)).toBe('ERR_BAD_TOKEN');
  });
});

describe('start-up', () => {
  test('a delivery program that is not executable stops the start, naming the key', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svcd-2fa-start-'));
    try {
      const users = join(dir, 'users.json');
      await writeFile(users, '[]');
      const raw = {
        server: { address: '127.0.0.1:0', data_dir: dir },
        api: { address: '127.0.0.1:0', auth_file: users, two_fa_token_delivery: join(dir, 'missing.sh') },
      };
      const config = resolveConfigPaths(svcdConfigSchema.parse(raw), join(dir, 'svcd.conf'));
      await expect(startServer(config, pino({ level: 'silent' }))).rejects.toThrow(
        /\[api\] two_fa_token_delivery: .*missing\.sh is not an executable file/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
