import { readFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import {
  ADMIN,
  OPERATOR,
  startTestServer,
  type StoreKind,
  type TestServer,
} from '../../../../test-support/server.js';

const basic = (username: string, password: string) => ({
  auth: { basic: [username, password] as [string, string] },
});
const asOperator = basic(OPERATOR.username, OPERATOR.password);

describe.each(['file', 'database:sqlite', 'database:postgres'] as StoreKind[])(
  'the caller’s own account with the %s store',
  (store) => {
    let t: TestServer;
    beforeEach(async () => {
      t = await startTestServer({ store });
    });
    afterEach(() => t?.stop());

    /** The user file takes writes on reload (SIGUSR1); the tables at once. */
    const applyWrites = async () => {
      if (store === 'file') await t.server.reloadUsers();
    };
    const changeStatus = store === 'file' ? 200 : 204;

    test('GET /me describes the caller, with Basic or Bearer', async () => {
      const expected = {
        data: {
          username: 'operator',
          groups: ['Operators'],
          two_fa_send_to: '',
          password_expired: false,
          two_fa_enabled: false,
          totp_enabled: false,
          // Without group_details_table: everything but the audit log (group-permissions.test.ts has the rest).
          effective_user_permissions: {
            commands: true,
            scripts: true,
            tunnels: true,
            vault: true,
            scheduler: true,
            auditlog: false,
            library: true,
            'client-groups': true,
            clients: true,
          },
          group_permissions_enabled: false,
        },
      };
      const res = await t.api.get('/me', asOperator);
      expect(res.status).toBe(200);
      expect(res.json).toEqual(expected);
      const token = await t.api.login(OPERATOR.username, OPERATOR.password);
      expect((await t.api.get('/me', { auth: { bearer: token } })).json).toEqual(expected);
      expect((await t.api.get('/me')).status).toBe(401);
    });

    test('PUT /me changes the password with the right old one; the user file gets the change', async () => {
      const newPassword = 'operator-new-secret';
      const res = await t.api.put(
        '/me',
        { password: newPassword, old_password: OPERATOR.password },
        asOperator,
      );
      expect(res.status).toBe(changeStatus);
      if (store === 'file') {
        expect(res.json.meta.takes_effect).toMatch(/reload/);
        const saved = JSON.parse(await readFile(t.userFile as string, 'utf8')) as { password: string }[];
        expect(saved.every((u) => /^\$2[aby]\$/.test(u.password))).toBe(true);
      }
      await applyWrites();
      expect((await t.api.get('/me', basic(OPERATOR.username, newPassword))).status).toBe(200);
      expect((await t.api.get('/me', asOperator)).status).toBe(401);
    });

    test('PUT /me with a missing or wrong old password is 403 and changes nothing', async () => {
      const missing = await t.api.put('/me', { password: 'another-secret-1' }, asOperator);
      expect(missing.status).toBe(403);
      expect(missing.json.errors[0]).toMatchObject({
        code: 'ERR_OLD_PASSWORD_REQUIRED',
        title: 'Missing old password',
      });
      const before = store === 'file' ? await readFile(t.userFile as string, 'utf8') : '';
      const wrong = await t.api.put(
        '/me',
        { password: 'another-secret-1', old_password: 'not-the-password', two_fa_send_to: 'x@example.com' },
        asOperator,
      );
      expect(wrong.status).toBe(403);
      expect(wrong.json.errors[0]).toMatchObject({
        code: 'ERR_WRONG_OLD_PASSWORD',
        title: 'Incorrect old password',
      });
      if (store === 'file') expect(await readFile(t.userFile as string, 'utf8')).toBe(before);
      await applyWrites();
      expect((await t.api.get('/me', asOperator)).json.data.two_fa_send_to).toBe('');
      expect((await t.api.get('/me', basic(OPERATOR.username, 'another-secret-1'))).status).toBe(401);
    });

    test('PUT /me sets and clears two_fa_send_to; bad bodies are 400', async () => {
      const set = await t.api.put('/me', { two_fa_send_to: 'op@example.com' }, asOperator);
      expect(set.status).toBe(changeStatus);
      await applyWrites();
      expect((await t.api.get('/me', asOperator)).json.data.two_fa_send_to).toBe('op@example.com');
      expect((await t.api.put('/me', { two_fa_send_to: '' }, asOperator)).status).toBe(changeStatus);
      await applyWrites();
      expect((await t.api.get('/me', asOperator)).json.data.two_fa_send_to).toBe('');

      for (const [body, problem] of [
        [{}, 'Nothing to change'],
        [{ password: 'short', old_password: OPERATOR.password }, 'password: must be at least 8'],
        [{ two_fa_send_to: 'x'.repeat(151) }, 'two_fa_send_to: must be at most 150'],
        [{ groups: ['Administrators'] }, "unknown field 'groups'"],
      ] as const) {
        const bad = await t.api.put('/me', body, asOperator);
        expect(bad.status, JSON.stringify(body)).toBe(400);
        expect(bad.json.errors[0].title).toContain(problem);
      }
      // The admin is unchanged by all of this.
      expect((await t.api.get('/me', basic(ADMIN.username, ADMIN.password))).status).toBe(200);
    });
  },
);

describe('the caller’s own account with the static user', () => {
  let t: TestServer;
  beforeEach(async () => {
    t = await startTestServer({ store: 'static' });
  });
  afterEach(() => t?.stop());

  test('GET /me works; PUT /me is refused with a hint', async () => {
    const asAdmin = basic(ADMIN.username, ADMIN.password);
    expect((await t.api.get('/me', asAdmin)).json.data).toMatchObject({
      username: 'admin',
      groups: ['Administrators'],
    });
    const res = await t.api.put(
      '/me',
      { password: 'new-admin-secret', old_password: ADMIN.password },
      asAdmin,
    );
    expect(res.status).toBe(400);
    expect(res.json.errors[0].code).toBe('ERR_STATIC_USER_STORE');
    expect((await t.api.get('/me', asAdmin)).status).toBe(200);
  });

  test('GET /me/ip answers the caller’s address, or the first public one a proxy forwarded', async () => {
    const url = `${t.server.apiUrl}/me/ip`;
    const authorization = 'Basic ' + Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString('base64');
    const direct = await fetch(url, { headers: { authorization } });
    expect(direct.status).toBe(200);
    expect(await direct.json()).toEqual({ data: { ip: '127.0.0.1' } });
    const forwarded = await fetch(url, {
      headers: { authorization, 'x-forwarded-for': '10.1.2.3, 192.168.0.9, 203.0.113.7, 198.51.100.1' },
    });
    expect(await forwarded.json()).toEqual({ data: { ip: '203.0.113.7' } });
    const privateOnly = await fetch(url, { headers: { authorization, 'x-forwarded-for': '10.1.2.3' } });
    expect(await privateOnly.json()).toEqual({ data: { ip: '127.0.0.1' } });
    expect((await fetch(url)).status).toBe(401);
  });
});
