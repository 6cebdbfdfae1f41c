import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { runProcess, SVCD_BIN } from '../../../../test-support/process.js';
import {
  ADMIN,
  OPERATOR,
  startTestServer,
  type StoreKind,
  type TestServer,
} from '../../../../test-support/server.js';

const AUTH_HEADER = 'X-Proxy-Authenticated';
const USER_HEADER = 'X-Proxy-User';
const asAdmin = { auth: { basic: [ADMIN.username, ADMIN.password] as [string, string] } };

/** A request as the reverse proxy forwards it: the two headers, plus any others. */
async function proxied(t: TestServer, path: string, headers: Record<string, string>) {
  const res = await fetch(`${t.server.apiUrl}${path}`, { headers });
  const text = await res.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary JSON
  const json: any = text ? JSON.parse(text) : undefined;
  return { status: res.status, json };
}

const delegatedApi = (extra: Record<string, unknown> = {}) => ({
  auth_header: AUTH_HEADER,
  user_header: USER_HEADER,
  ...extra,
});

describe('delegated authentication', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.stop();
    t = undefined;
  });

  test.each(['file', 'database:sqlite', 'database:postgres'] as StoreKind[])(
    '%s store: /login with the headers logs the named user in; every other route still needs the JWT',
    async (store) => {
      t = await startTestServer({ store, api: delegatedApi() });
      const login = await proxied(t, '/login', { [AUTH_HEADER]: 'yes', [USER_HEADER]: OPERATOR.username });
      expect(login.status).toBe(200);
      const token = login.json.data.token as string;
      const me = await proxied(t, '/me', { authorization: `Bearer ${token}` });
      expect(me.json.data).toMatchObject({ username: 'operator', groups: ['Operators'] });

      // The headers are ignored everywhere but /login.
      const headersOnly = await proxied(t, '/me', { [AUTH_HEADER]: 'yes', [USER_HEADER]: 'admin' });
      expect(headersOnly.status).toBe(401);
      expect(headersOnly.json.errors[0].code).toBe('ERR_AUTH_REQUIRED');
      // Without the auth header, /login wants Basic credentials as usual.
      const userOnly = await proxied(t, '/login', { [USER_HEADER]: 'admin' });
      expect(userOnly.status).toBe(401);
      expect((await t.api.get('/login', asAdmin)).status).toBe(200);

      // A user who does not exist is refused and not created (create_missing_users is off by default).
      const unknown = await proxied(t, '/login', { [AUTH_HEADER]: 'yes', [USER_HEADER]: 'stranger' });
      expect(unknown.status).toBe(401);
      expect(unknown.json.errors[0]).toMatchObject({
        code: 'ERR_DELEGATED_USER_UNKNOWN',
        detail: 'create the user, or set [api] create_missing_users = true',
      });
      const users = await t.api.get('/users', asAdmin);
      expect(users.json.data.map((u: { username: string }) => u.username)).toEqual(['admin', 'operator']);

      // The proxy marked the request authenticated but named nobody.
      const nobody = await proxied(t, '/login', { [AUTH_HEADER]: 'yes' });
      expect(nobody.status).toBe(401);
      expect(nobody.json.errors[0].title).toBe(
        `The request carries ${AUTH_HEADER} but no user name in ${USER_HEADER}`,
      );
      const badName = await proxied(t, '/login', { [AUTH_HEADER]: 'yes', [USER_HEADER]: 'a:b' });
      expect(badName.status).toBe(400);
    },
  );

  test.each(['database:sqlite', 'database:postgres'] as StoreKind[])(
    '%s store: create_missing_users creates the user in default_user_group at the first login',
    async (store) => {
      t = await startTestServer({
        store,
        api: delegatedApi({ create_missing_users: true, default_user_group: 'Viewers' }),
      });
      const headers = { [AUTH_HEADER]: '1', [USER_HEADER]: 'newcomer' };
      const first = await proxied(t, '/login', headers);
      expect(first.status).toBe(200);
      const me = await proxied(t, '/me', { authorization: `Bearer ${first.json.data.token}` });
      expect(me.json.data).toMatchObject({ username: 'newcomer', groups: ['Viewers'] });
      // The second login finds the user; the user has no password anyone knows.
      expect((await proxied(t, '/login', headers)).status).toBe(200);
      const users = await t.api.get('/users', asAdmin);
      expect(users.json.data).toContainEqual({
        username: 'newcomer',
        groups: ['Viewers'],
        two_fa: { enabled: false, method: null },
      });
      expect(users.json.meta.count).toBe(3);
    },
  );

  /** Starts the real svcd with `api` as its [api] section; resolves with its exit code and stderr. */
  async function startWith(api: string) {
    const dir = await mkdtemp(join(tmpdir(), 'svcd-delegated-'));
    try {
      const configPath = join(dir, 'svcd.conf');
      const server = `[server]\naddress = "127.0.0.1:0"\ndata_dir = ${JSON.stringify(dir)}\n`;
      await writeFile(configPath, `${server}[api]\naddress = "127.0.0.1:0"\n${api}`);
      return await runProcess(SVCD_BIN, ['-c', configPath]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  test('svcd refuses to start with auth_header and the static user, or create_missing_users and a user file', async () => {
    const headers = `auth_header = "${AUTH_HEADER}"\nuser_header = "${USER_HEADER}"\n`;
    const staticUser = await startWith(`auth = "admin:admin-secret-1"\n${headers}`);
    expect(staticUser.code).not.toBe(0);
    expect(staticUser.stderr).toContain(
      '[api] auth_header: delegated (header) authentication is not possible with the single static user',
    );
    const userFile = await startWith(`auth_file = "users.json"\n${headers}create_missing_users = true\n`);
    expect(userFile.code).not.toBe(0);
    expect(userFile.stderr).toContain(
      '[api] create_missing_users: users created at login must take effect at once',
    );
  });
});
