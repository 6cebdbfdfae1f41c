/**
 * POST /me/token-renewal: a Bearer session gets a fresh token without the password (the web console renews
 * before its token ends); the old token stops working at once, Basic and API tokens have nothing to renew.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ADMIN, OPERATOR, startTestServer, type TestServer } from '../../../../test-support/server.js';
import { awayFromStepEdge, currentStep, totpCode } from '../../../../test-support/totp.js';

const bearer = (token: string) => ({ auth: { bearer: token } });
const basic = (u: { username: string; password: string }) => ({
  auth: { basic: [u.username, u.password] as [string, string] },
});
const errorCode = (res: { json: { errors: { code: string }[] } }) => res.json.errors[0]?.code;

/** The claims of one of svcd's JWTs (read only to compare lifetimes and stages). */
function claims(token: string): { sub: string; iat: number; exp: number; tfa?: string } {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
    sub: string;
    iat: number;
    exp: number;
    tfa?: string;
  };
}

describe('token renewal without a second factor', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ store: 'database:sqlite', api: { max_token_lifetime: '2h' } });
  });
  afterAll(() => t?.stop());

  test('a Bearer token gets a new one of the same lifetime, and the old one is revoked', async () => {
    const old = await t.api.login(OPERATOR.username, OPERATOR.password, 120);
    const res = await t.api.post('/me/token-renewal', undefined, bearer(old));
    expect(res.status).toBe(200);
    expect(res.json.data.two_fa).toBeNull();
    const fresh = res.json.data.token as string;
    expect(fresh).not.toBe(old);
    const [before, after] = [claims(old), claims(fresh)];
    expect(after.sub).toBe('operator');
    expect(after.exp - after.iat).toBeGreaterThanOrEqual(120);
    expect(after.exp - after.iat).toBeLessThanOrEqual(before.exp - before.iat + 1);
    expect((await t.api.get('/me', bearer(fresh))).json.data.username).toBe('operator');
    expect((await t.api.get('/me', bearer(old))).status).toBe(401);
    // A token renews once: the revoked one cannot mint another session.
    const again = await t.api.post('/me/token-renewal', undefined, bearer(old));
    expect(again.status).toBe(401);
    expect(errorCode(again)).toBe('ERR_BAD_TOKEN');
    // The renewed token is a session like any other: logout ends it.
    expect((await t.api.delete('/logout', bearer(fresh))).status).toBe(204);
    expect((await t.api.get('/me', bearer(fresh))).status).toBe(401);
  });

  test('token-lifetime chooses another lifetime, within max_token_lifetime', async () => {
    const old = await t.api.login(ADMIN.username, ADMIN.password, 60);
    const res = await t.api.post('/me/token-renewal?token-lifetime=3600', undefined, bearer(old));
    expect(res.status).toBe(200);
    const renewed = claims(res.json.data.token as string);
    expect(renewed.exp - renewed.iat).toBeGreaterThanOrEqual(3600);
    expect(renewed.exp - renewed.iat).toBeLessThanOrEqual(3601);

    const other = await t.api.login(ADMIN.username, ADMIN.password, 60);
    const tooLong = await t.api.post('/me/token-renewal?token-lifetime=86400', undefined, bearer(other));
    expect(tooLong.status).toBe(400);
    expect(tooLong.json.errors[0].detail).toMatch(/7200 seconds/);
    for (const bad of ['abc', '0', '-5', '1.5']) {
      const res = await t.api.post(`/me/token-renewal?token-lifetime=${bad}`, undefined, bearer(other));
      expect(res.status, bad).toBe(400);
    }
    // Refused input changes nothing: the token still works and still renews.
    expect((await t.api.get('/me', bearer(other))).status).toBe(200);
    expect((await t.api.post('/me/token-renewal', undefined, bearer(other))).status).toBe(200);
  });

  test('401 without valid credentials; HTTP Basic and API tokens have no session to renew', async () => {
    expect((await t.api.post('/me/token-renewal', undefined)).status).toBe(401);
    expect((await t.api.post('/me/token-renewal', undefined, bearer('not.a.token'))).status).toBe(401);
    const wrong = await t.api.post('/me/token-renewal', undefined, {
      auth: { basic: [OPERATOR.username, 'wrong-password'] },
    });
    expect(wrong.status).toBe(401);

    const withPassword = await t.api.post('/me/token-renewal', undefined, basic(OPERATOR));
    expect(withPassword.status).toBe(400);
    expect(errorCode(withPassword)).toBe('ERR_INVALID_REQUEST');
    expect(withPassword.json.errors[0].title).toMatch(/Bearer/);

    const created = await t.api.post('/me/tokens', { name: 'script', scope: 'read+write' }, basic(OPERATOR));
    expect(created.status).toBe(201);
    const apiToken = { auth: { basic: [OPERATOR.username, created.json.data.token] as [string, string] } };
    expect((await t.api.post('/me/token-renewal', undefined, apiToken)).status).toBe(400);
    const read = await t.api.post('/me/tokens', { name: 'reader', scope: 'read' }, basic(OPERATOR));
    const readToken = { auth: { basic: [OPERATOR.username, read.json.data.token] as [string, string] } };
    const refused = await t.api.post('/me/token-renewal', undefined, readToken);
    expect(refused.status).toBe(403);
    expect(errorCode(refused)).toBe('ERR_API_TOKEN_SCOPE');
  });
});

describe('token renewal with an authenticator app', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ store: 'database:sqlite', api: { totp_enabled: true } });
  });
  afterAll(() => t?.stop());

  test('a verified token renews as verified without a code; a login token does not renew', async () => {
    const login = await t.api.get('/login', basic(ADMIN));
    const loginToken = login.json.data.token as string;
    const refused = await t.api.post('/me/token-renewal', undefined, bearer(loginToken));
    expect(refused.status).toBe(401);
    expect(errorCode(refused)).toBe('ERR_LOGIN_TOKEN_ONLY');

    const secret = await t.api.post('/me/totp-secret', undefined, bearer(loginToken));
    expect(secret.status).toBe(200);
    await awayFromStepEdge();
    const verified = await t.api.post(
      '/verify-2fa',
      { username: ADMIN.username, token: totpCode(secret.json.secret as string, currentStep()) },
      bearer(loginToken),
    );
    expect(verified.status).toBe(200);
    const res = await t.api.post('/me/token-renewal', undefined, bearer(verified.json.data.token as string));
    expect(res.status).toBe(200);
    const fresh = res.json.data.token as string;
    expect(claims(fresh).tfa).toBe('verified');
    // Only a two-factor-verified admin token may delete another user's secret: the renewed one still may.
    const reset = await t.api.delete(`/users/${OPERATOR.username}/totp-secret`, bearer(fresh));
    expect(reset.status).not.toBe(401);
    expect(reset.status).not.toBe(403);
  });
});
