/**
 * The named permissions over the served OpenAPI document (issue 28 §1): every operation × {no permission, the
 * permission it declares, every permission but that one, Administrators} → the status its declaration says.
 * Groups grant one permission each; a user in all groups but one checks that effective permissions are the
 * union over groups and that exactly the declared permission is what a route asks for.
 */
import type { FastifyInstance } from 'fastify';
import { PERMISSIONS, type Permission } from '@svc/protocol';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { basicHeader } from '../../../../test-support/api-client.js';
import { ADMIN, startTestServer, type SeedUser, type TestServer } from '../../../../test-support/server.js';
import {
  acceptsLoginToken,
  answerOf,
  concretePath,
  isAdministratorsOnly,
  isBasicOnly,
  isPublic,
  label,
  permissionOf,
  servedOperations,
  violation,
  type ServedOperation,
} from './served-api.js';

const only = (p: Permission) => `only-${p}`;
const allBut = (p: Permission) => `all-but-${p}`;
const PASSWORD = 'matrix-password-1';

const USERS: SeedUser[] = [
  ADMIN,
  { username: 'nobody', password: PASSWORD, groups: ['no-row'] },
  ...PERMISSIONS.map((p) => ({ username: only(p), password: PASSWORD, groups: [only(p)] })),
  ...PERMISSIONS.map((p) => ({
    username: allBut(p),
    password: PASSWORD,
    groups: PERMISSIONS.filter((q) => q !== p).map(only),
  })),
];

type Expected = 403 | 'allowed';

describe('the permission matrix over the served document (group_details_table set)', () => {
  let t: TestServer;
  let app: FastifyInstance;
  let operations: ServedOperation[];

  beforeAll(async () => {
    t = await startTestServer({
      store: 'database:sqlite',
      users: USERS,
      clientAuth: { source: 'table', entries: { 'matrix-agents': 'matrix-secret-1' } },
      server: { auth_write: true },
      api: { group_details_table: 'group_details', enable_ws_test_endpoints: true, max_failed_login: 0 },
    });
    app = t.server.apiApp as FastifyInstance;
    operations = await servedOperations(app);
    const admin = { auth: { basic: [ADMIN.username, ADMIN.password] as [string, string] } };
    for (const p of PERMISSIONS) {
      const res = await t.api.put(`/user-groups/${only(p)}`, { permissions: { [p]: true } }, admin);
      expect(res.status, res.text).toBe(200);
    }
  });
  afterAll(() => t?.stop());

  /** Operations any authenticated caller reaches by Basic credentials (the rest is auth-matrix.test.ts's). */
  const checked = () => operations.filter((op) => !isPublic(op) && !acceptsLoginToken(op));

  const call = (op: ServedOperation, username: string, password = PASSWORD) =>
    app.inject({
      method: op.method as 'GET',
      url: concretePath(op.path, () => 'matrix-none'),
      headers: {
        authorization: basicHeader(username, password),
        ...(op.operation.requestBody ? { 'content-type': 'application/json' } : {}),
      },
      ...(op.operation.requestBody ? { payload: '{}' } : {}),
    });

  test('every named permission guards at least one operation, and only known names are declared', () => {
    const declared = new Set(operations.map(permissionOf).filter(Boolean));
    expect([...declared].sort()).toEqual([...PERMISSIONS].sort());
  });

  test('every operation × {none, its permission, all but it, admin} answers as declared', async () => {
    const mismatches: string[] = [];
    let cells = 0;
    for (const op of checked()) {
      const needed = permissionOf(op) as Permission | undefined;
      // A route without a permission is checked with the users of one permission each, all the same.
      const subject: Permission = needed ?? 'commands';
      const callers: [string, string, Expected][] = [
        ['nobody', PASSWORD, needed || isAdministratorsOnly(op) ? 403 : 'allowed'],
        [only(subject), PASSWORD, isAdministratorsOnly(op) ? 403 : 'allowed'],
        [allBut(subject), PASSWORD, needed || isAdministratorsOnly(op) ? 403 : 'allowed'],
        [ADMIN.username, ADMIN.password, 'allowed'],
      ];
      const answers = await Promise.all(callers.map(([user, password]) => call(op, user, password)));
      for (const [i, [user, , expected]] of callers.entries()) {
        const res = answers[i] as Awaited<ReturnType<typeof call>>;
        cells += 1;
        const status = res.statusCode;
        const fits = expected === 'allowed' ? status !== 401 && status !== 403 : status === 403;
        if (!fits) mismatches.push(`${label(op)} as ${user}: ${status}, expected ${expected} (${res.body})`);
        const wrong = violation(answerOf(res));
        if (wrong) mismatches.push(`${label(op)} as ${user}: ${wrong}`);
        if (status === 403 && needed && !isAdministratorsOnly(op)) {
          const [error] = res.json<{ errors: { code: string; title: string }[] }>().errors;
          if (error?.code !== 'ERR_PERMISSION_REQUIRED' || error.title !== `Missing permission "${needed}"`)
            mismatches.push(`${label(op)} as ${user}: refused as ${JSON.stringify(error)}`);
        }
      }
    }
    expect(mismatches).toEqual([]);
    expect(cells).toBe(checked().length * 4);
  });

  test('the matrix is not vacuous: most operations need a permission, each permission several refusals', () => {
    const guarded = checked().filter((op) => permissionOf(op) !== undefined);
    expect(guarded.length).toBeGreaterThan(30);
    for (const p of PERMISSIONS)
      expect(guarded.filter((op) => permissionOf(op) === p).length, p).toBeGreaterThan(0);
    expect(
      checked().filter((op) => !permissionOf(op) && !isAdministratorsOnly(op) && !isBasicOnly(op)).length,
    ).toBeGreaterThan(10);
  });

  test('GET /me returns the union of the groups as effective_user_permissions', async () => {
    const me = async (username: string, password = PASSWORD) => {
      const res = await t.api.get('/me', { auth: { basic: [username, password] } });
      expect(res.status).toBe(200);
      return res.json.data as {
        effective_user_permissions: Record<string, boolean>;
        group_permissions_enabled: boolean;
      };
    };
    const none = Object.fromEntries(PERMISSIONS.map((p) => [p, false]));
    const all = Object.fromEntries(PERMISSIONS.map((p) => [p, true]));
    expect(await me('nobody')).toMatchObject({
      effective_user_permissions: none,
      group_permissions_enabled: true,
    });
    expect((await me(only('vault'))).effective_user_permissions).toEqual({ ...none, vault: true });
    expect((await me(allBut('auditlog'))).effective_user_permissions).toEqual({ ...all, auditlog: false });
    expect((await me(ADMIN.username, ADMIN.password)).effective_user_permissions).toEqual(all);
  });

  test('the job sockets need commands or scripts as POST /commands and /scripts do', async () => {
    const { request } = await import('node:http');
    const upgrade = (path: string, username: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(`${t.server.apiUrl}${path}`, {
          headers: {
            connection: 'Upgrade',
            upgrade: 'websocket',
            'sec-websocket-version': '13',
            'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
            authorization: basicHeader(username, PASSWORD),
          },
        });
        req.on('response', (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('upgrade', (_res, socket) => {
          socket.destroy();
          resolve(101);
        });
        req.on('error', reject);
        req.end();
      });
    expect(await upgrade('/ws/commands', allBut('commands'))).toBe(403);
    expect(await upgrade('/ws/commands', only('commands'))).toBe(101);
    expect(await upgrade('/ws/scripts', only('commands'))).toBe(403);
    expect(await upgrade('/ws/scripts', only('scripts'))).toBe(101);
  });

  test('a permission refusal is in the audit log, naming the permission', async () => {
    const refused = await t.api.post(
      '/commands',
      { command: 'id', client_ids: ['x'] },
      {
        auth: { basic: [allBut('commands'), PASSWORD] },
      },
    );
    expect(refused.status).toBe(403);
    await t.server.flushAudit();
    const res = await t.api.get(
      `/auditlog?filter[username]=${allBut('commands')}&filter[outcome]=refused&page[limit]=100`,
      { auth: { basic: [ADMIN.username, ADMIN.password] } },
    );
    expect(res.status).toBe(200);
    const responses = (res.json.data as { action: string; response: string }[])
      .filter((r) => r.action === 'execute.start')
      .map((r) => JSON.parse(r.response) as Record<string, unknown>);
    expect(responses).toContainEqual({
      status: 403,
      code: 'ERR_PERMISSION_REQUIRED',
      permission: 'commands',
    });
  });
});
