import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  ADMIN,
  OPERATOR,
  startTestServer,
  type StoreKind,
  type TestServer,
} from '../../../../test-support/server.js';
import { awayFromStepEdge, currentStep, totpCode } from '../../../../test-support/totp.js';
import { parseSvcdConfig } from '../../src/config/schema.js';

const basic = (u: { username: string; password: string }) => ({
  auth: { basic: [u.username, u.password] as [string, string] },
});
const bearer = (token: string) => ({ auth: { bearer: token } });
const errorCode = (res: { json: { errors: { code: string }[] } }) => res.json.errors[0]?.code;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

describe.each<StoreKind>(['file', 'database:sqlite', 'database:postgres'])(
  'authenticator-app login (TOTP) with the %s store',
  (store) => {
    let t: TestServer;
    const secrets = new Map<string, string>();
    beforeAll(async () => {
      t = await startTestServer({ store, api: { totp_enabled: true, totp_account_name: 'acme-svc' } });
    });
    afterAll(() => t?.stop());

    const login = async (user: { username: string; password: string }) => {
      const res = await t.api.get('/login', basic(user));
      expect(res.status).toBe(200);
      return { token: res.json.data.token as string, twoFa: res.json.data.two_fa };
    };
    const verify = (token: string, username: string, code: string) =>
      t.api.post('/verify-2fa', { username, token: code }, bearer(token));
    /** Creates the user's secret with a login token (first login) and completes the login. */
    const enrol = async (user: { username: string; password: string }) => {
      const { token } = await login(user);
      const created = await t.api.post('/me/totp-secret', undefined, bearer(token));
      expect(created.status).toBe(200);
      secrets.set(user.username, created.json.secret);
      await awayFromStepEdge();
      const res = await verify(token, user.username, totpCode(created.json.secret, currentStep()));
      expect(res.status).toBe(200);
      return res.json.data.token as string;
    };

    test('first login: pending; the login token creates the secret once; its QR is a PNG of an otpauth URI', async () => {
      const { token, twoFa } = await login(OPERATOR);
      expect(twoFa).toEqual({
        send_to: '',
        delivery_method: 'totp_authenticator_app',
        totp_key_status: 'pending',
      });
      // Only /verify-2fa and POST /me/totp-secret accept the login token.
      expect((await t.api.get('/me/totp-secret', bearer(token))).status).toBe(401);
      expect((await t.api.delete('/me/totp-secret', bearer(token))).status).toBe(401);
      expect((await t.api.get('/status', bearer(token))).status).toBe(401);
      const created = await t.api.post('/me/totp-secret', undefined, bearer(token));
      expect(created.status).toBe(200);
      expect(Object.keys(created.json).sort()).toEqual(['qr', 'secret']);
      expect(created.json.secret).toMatch(/^[A-Z2-7]{32}$/);
      const png = Buffer.from(created.json.qr, 'base64');
      expect(png.subarray(0, 8)).toEqual(PNG_SIGNATURE);
      expect(png.subarray(12, 16).toString('ascii')).toBe('IHDR');
      expect(png.readUInt32BE(16)).toBe(200);
      const again = await t.api.post('/me/totp-secret', undefined, bearer(token));
      expect(again.status).toBe(409);
      expect(errorCode(again)).toBe('ERR_TOTP_SECRET_EXISTS');
      secrets.set(OPERATOR.username, created.json.secret);
      expect((await login(OPERATOR)).twoFa.totp_key_status).toBe('exists');
    });

    test('codes: one step back is accepted, a used code is not accepted again, two steps away never', async () => {
      const secret = secrets.get(OPERATOR.username) ?? '';
      await awayFromStepEdge();
      const step = currentStep();
      const first = await login(OPERATOR);
      const previous = await verify(first.token, 'operator', totpCode(secret, step - 1));
      expect(previous.status).toBe(200);
      const authToken = previous.json.data.token as string;
      expect((await t.api.get('/status', bearer(authToken))).status).toBe(200);
      expect((await verify(authToken, 'operator', totpCode(secret, step))).status).toBe(401);

      const second = await login(OPERATOR);
      expect((await verify(second.token, 'operator', totpCode(secret, step + 2))).status).toBe(401);
      expect((await verify(second.token, 'operator', totpCode(secret, step - 2))).status).toBe(401);
      expect((await verify(second.token, 'operator', totpCode(secret, step))).status).toBe(200);
      const replay = await login(OPERATOR);
      const replayed = await verify(replay.token, 'operator', totpCode(secret, step));
      expect(replayed.status).toBe(401);
      expect(errorCode(replayed)).toBe('ERR_TWO_FA_CODE_WRONG');
    });

    test('verify before a secret exists is a conflict; basic passwords work only on /login', async () => {
      const { token } = await login(ADMIN);
      const res = await verify(token, 'admin', '123456');
      expect(res.status).toBe(409);
      expect((await t.api.get('/status', basic(ADMIN))).status).toBe(401);
    });

    test('GET and DELETE /me/totp-secret with the auth token; the next login is pending again, as after the user is deleted', async () => {
      const user = { username: 'dora', password: 'dora-secret-1', groups: [] };
      const adminToken = await enrol(ADMIN);
      expect((await t.api.post('/users', user, bearer(adminToken))).status).toBe(201);
      if (store === 'file') await t.server.reloadUsers();
      // The users list shows who has an authenticator app (never the secret).
      const before = await t.api.get('/users?filter[username]=admin,dora', bearer(adminToken));
      expect(before.json.data.map((u: { two_fa: unknown }) => u.two_fa)).toEqual([
        { enabled: true, method: 'totp_authenticator_app' },
        { enabled: false, method: 'totp_authenticator_app' },
      ]);
      const token = await enrol(user);
      const after = await t.api.get('/users?filter[username]=dora', bearer(adminToken));
      expect(after.json.data[0].two_fa).toEqual({ enabled: true, method: 'totp_authenticator_app' });
      expect(after.text).not.toContain(secrets.get('dora') ?? 'no secret');
      const read = await t.api.get('/me/totp-secret', bearer(token));
      expect(read.status).toBe(200);
      expect(read.json.secret).toBe(secrets.get('dora'));
      expect((await t.api.delete('/me/totp-secret', bearer(token))).status).toBe(204);
      expect((await t.api.get('/me/totp-secret', bearer(token))).status).toBe(404);
      expect((await login(user)).twoFa.totp_key_status).toBe('pending');

      // An administrator removes another user's secret with a 2FA-verified token; others may not.
      await enrol(user);
      expect((await t.api.delete('/users/dora/totp-secret', bearer(token))).status).toBe(403);
      const freshAdmin = await login(ADMIN);
      await awayFromStepEdge();
      const adminVerified = await verify(
        freshAdmin.token,
        'admin',
        totpCode(secrets.get('admin') ?? '', currentStep() + 1),
      );
      expect(adminVerified.status).toBe(200);
      expect((await t.api.delete('/users/dora/totp-secret', bearer(freshAdmin.token))).status).toBe(401);
      const removed = await t.api.delete('/users/dora/totp-secret', bearer(adminVerified.json.data.token));
      expect(removed.status).toBe(204);
      expect((await login(user)).twoFa.totp_key_status).toBe('pending');
      expect(
        (await t.api.delete('/users/nobody/totp-secret', bearer(adminVerified.json.data.token))).status,
      ).toBe(404);

      // Deleting a user deletes their secret: a new user of that name starts without one.
      await enrol(user);
      expect((await login(user)).twoFa.totp_key_status).toBe('exists');
      // The user file answers 200: the change takes effect at the next reload.
      expect((await t.api.delete('/users/dora', bearer(adminToken))).status).toBe(
        store === 'file' ? 200 : 204,
      );
      expect((await t.api.post('/users', user, bearer(adminToken))).status).toBe(201);
      if (store === 'file') await t.server.reloadUsers();
      expect((await login(user)).twoFa.totp_key_status).toBe('pending');
    });
  },
);

describe('without totp_enabled', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ store: 'database:sqlite' });
  });
  afterAll(() => t?.stop());

  test('the TOTP endpoints answer 400 and /verify-2fa 409', async () => {
    const token = await t.api.login(ADMIN.username, ADMIN.password);
    const res = await t.api.post('/me/totp-secret', undefined, bearer(token));
    expect(res.status).toBe(400);
    expect(errorCode(res)).toBe('ERR_TOTP_DISABLED');
    const verify = await t.api.post('/verify-2fa', { username: 'admin', token: '123456' }, bearer(token));
    expect(verify.status).toBe(409);
    expect((await t.api.get('/login', basic(ADMIN))).json.data.two_fa).toBeNull();
  });

  test("another user's secret is for Administrators first: a non-admin gets 403, an admin 400", async () => {
    const asOperator = await t.api.delete('/users/admin/totp-secret', basic(OPERATOR));
    expect([asOperator.status, errorCode(asOperator)]).toEqual([403, 'ERR_ADMIN_REQUIRED']);
    const asAdmin = await t.api.delete('/users/operator/totp-secret', basic(ADMIN));
    expect([asAdmin.status, errorCode(asAdmin)]).toEqual([400, 'ERR_TOTP_DISABLED']);
  });
});

describe('start-up errors name both keys', () => {
  const problems = (text: string): string => {
    try {
      parseSvcdConfig(text);
      return '';
    } catch (err) {
      return (err as Error).message;
    }
  };
  test('TOTP with the static user, and TOTP with delivered codes', () => {
    expect(problems('[api]\nauth = "admin:secret-pass"\ntotp_enabled = true\n')).toMatch(
      /\[api\] totp_enabled: .*static user \(\[api\] auth\)/,
    );
    expect(
      problems('[api]\nauth_file = "u.json"\ntotp_enabled = true\ntwo_fa_token_delivery = "/bin/true"\n'),
    ).toMatch(/\[api\] totp_enabled: cannot be combined with two_fa_token_delivery/);
  });
});
