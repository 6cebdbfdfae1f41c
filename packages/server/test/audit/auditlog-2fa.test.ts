import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Auth } from '../../../../test-support/api-client.js';
import { ADMIN, startTestServer, type TestServer } from '../../../../test-support/server.js';
import { awayFromStepEdge, currentStep, totpCode } from '../../../../test-support/totp.js';

const asAdmin: Auth = { basic: [ADMIN.username, ADMIN.password] };
const bearer = (token: string) => ({ auth: { bearer: token } as Auth });

describe('audit log: two-factor login', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ store: 'database:sqlite', api: { totp_enabled: true } });
  });
  afterAll(() => t?.stop());

  test('the secret creation and each /verify-2fa attempt are recorded; the TOTP secret and codes are not', async () => {
    await awayFromStepEdge();
    const login = await t.api.get('/login', { auth: asAdmin });
    const token = login.json.data.token as string;
    const created = await t.api.post('/me/totp-secret', undefined, bearer(token));
    expect(created.status, created.text).toBe(200);
    const secret = created.json.secret as string;
    const wrong = await t.api.post('/verify-2fa', { username: 'admin', token: '000000' }, bearer(token));
    expect(wrong.status).toBeGreaterThanOrEqual(400);
    const code = totpCode(secret, currentStep());
    const right = await t.api.post('/verify-2fa', { username: 'admin', token: code }, bearer(token));
    expect(right.status, right.text).toBe(200);
    const session = right.json.data.token as string;

    await t.server.flushAudit();
    const res = await t.api.get('/auditlog?page[limit]=100&sort=timestamp', bearer(session));
    expect(res.status, res.text).toBe(200);
    const rows = res.json.data as {
      application: string;
      action: string;
      outcome: string;
      username: string;
    }[];
    expect(rows.map((r) => `${r.application} ${r.action} ${r.outcome}`)).toEqual([
      'auth.user success success',
      'auth.user.totp create success',
      'auth.user.2fa failed refused',
      'auth.user.2fa success success',
    ]);
    expect(rows.every((r) => r.username === 'admin')).toBe(true);
    const text = JSON.stringify(rows);
    expect(text).not.toContain(secret);
    expect(text).not.toContain(code);
    expect(text).not.toContain(token);
  });
});
