import { PERMISSIONS } from '@svc/protocol';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  ADMIN,
  OPERATOR,
  startTestServer,
  type StoreKind,
  type TestServer,
} from '../../../../test-support/server.js';

const asAdmin = { auth: { basic: [ADMIN.username, ADMIN.password] as [string, string] } };
const asOperator = { auth: { basic: [OPERATOR.username, OPERATOR.password] as [string, string] } };
const NONE = Object.fromEntries(PERMISSIONS.map((p) => [p, false]));
const ALL = Object.fromEntries(PERMISSIONS.map((p) => [p, true]));

describe('user groups (GET/PUT/DELETE /user-groups) with group_details_table', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ store: 'database:sqlite', api: { group_details_table: 'group_details' } });
  });
  afterAll(() => t?.stop());

  test('lists Administrators (everything) and member groups without a row (nothing)', async () => {
    const res = await t.api.get('/user-groups', asAdmin);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      data: [
        {
          name: 'Administrators',
          permissions: ALL,
          client_groups: null,
          tunnels_restricted: {},
          commands_restricted: {},
        },
        {
          name: 'Operators',
          permissions: NONE,
          client_groups: null,
          tunnels_restricted: {},
          commands_restricted: {},
        },
      ],
      meta: { count: 2 },
    });
    const unknown = await t.api.get('/user-groups/nobody-here', asAdmin);
    expect(unknown.json.data).toEqual({
      name: 'nobody-here',
      permissions: NONE,
      client_groups: null,
      tunnels_restricted: {},
      commands_restricted: {},
    });
  });

  test('a group without a row grants nothing; PUT grants at once; an absent field keeps what is stored', async () => {
    const before = await t.api.get('/commands', asOperator);
    expect([before.status, before.json.errors[0].code]).toEqual([403, 'ERR_PERMISSION_REQUIRED']);
    expect(before.json.errors[0].detail).toMatch(/Operators/);

    const put = await t.api.put(
      '/user-groups/Operators',
      { permissions: { commands: true, vault: true }, commands_restricted: { allow: ['^ls'] } },
      asAdmin,
    );
    expect(put.status, put.text).toBe(200);
    const stored = {
      name: 'Operators',
      permissions: { ...NONE, commands: true, vault: true },
      client_groups: null,
      tunnels_restricted: {},
      commands_restricted: { allow: ['^ls'] },
    };
    expect(put.json.data).toEqual(stored);
    expect((await t.api.get('/user-groups/Operators', asAdmin)).json.data).toEqual(stored);
    expect((await t.api.get('/commands', asOperator)).status).toBe(200);
    const me = await t.api.get('/me', asOperator);
    expect(me.json.data.effective_user_permissions).toEqual({ ...NONE, commands: true, vault: true });

    const restrictOnly = await t.api.put(
      '/user-groups/Operators',
      { tunnels_restricted: { allow: { remote: [22] } } },
      asAdmin,
    );
    expect(restrictOnly.json.data).toEqual({ ...stored, tunnels_restricted: { allow: { remote: [22] } } });
    // `permissions` replaces the whole set.
    const replaced = await t.api.put('/user-groups/Operators', { permissions: { tunnels: true } }, asAdmin);
    expect(replaced.json.data.permissions).toEqual({ ...NONE, tunnels: true });
    expect((await t.api.get('/commands', asOperator)).status).toBe(403);
  });

  test('PUT takes the client scope and checks the restrictions before storing anything', async () => {
    const bad = await t.api.put(
      '/user-groups/Scoped',
      { permissions: { commands: true }, commands_restricted: { deny: ['(a+)+$'] } },
      asAdmin,
    );
    expect([bad.status, bad.json.errors[0].code]).toEqual([400, 'ERR_INVALID_GROUP_POLICY']);
    expect(bad.json.errors[0].detail).toMatch(/commands_restricted/);
    expect((await t.api.get('/user-groups/Scoped', asAdmin)).json.data.permissions).toEqual(NONE);

    const scoped = await t.api.put(
      '/user-groups/Scoped',
      { permissions: { commands: true }, client_groups: ['web'] },
      asAdmin,
    );
    expect(scoped.status, scoped.text).toBe(200);
    expect(scoped.json.data).toMatchObject({ client_groups: ['web'], permissions: { commands: true } });
    // Changing the permissions alone keeps the scope stored beside them.
    const again = await t.api.put('/user-groups/Scoped', { permissions: { scripts: true } }, asAdmin);
    expect(again.json.data).toMatchObject({ client_groups: ['web'], permissions: { scripts: true } });
    const lifted = await t.api.put('/user-groups/Scoped', { client_groups: null }, asAdmin);
    expect(lifted.json.data.client_groups).toBeNull();
    expect((await t.api.delete('/user-groups/Scoped', asAdmin)).status).toBe(204);
  });

  test('refuses unknown permissions, another name, Administrators and bad names', async () => {
    const unknown = await t.api.put('/user-groups/Operators', { permissions: { monitoring: true } }, asAdmin);
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.json.errors)).toMatch(/unknown field 'monitoring' in permissions/);
    const renamed = await t.api.put('/user-groups/Operators', { name: 'Other' }, asAdmin);
    expect(renamed.status).toBe(400);
    for (const res of [
      await t.api.put('/user-groups/Administrators', { permissions: {} }, asAdmin),
      await t.api.delete('/user-groups/Administrators', asAdmin),
    ])
      expect([res.status, res.json.errors[0].code]).toEqual([400, 'ERR_ADMINISTRATORS_GROUP_FIXED']);
    const bad = await t.api.put(
      `/user-groups/${encodeURIComponent(' padded ')}`,
      { permissions: {} },
      asAdmin,
    );
    expect(bad.status).toBe(400);
  });

  test('only Administrators manage groups', async () => {
    for (const res of [
      await t.api.get('/user-groups', asOperator),
      await t.api.get('/user-groups/Operators', asOperator),
      await t.api.put('/user-groups/Operators', { permissions: { auditlog: true } }, asOperator),
      await t.api.delete('/user-groups/Operators', asOperator),
    ])
      expect([res.status, res.json.errors[0].code]).toEqual([403, 'ERR_ADMIN_REQUIRED']);
  });

  test('DELETE removes the row and the memberships', async () => {
    await t.api.put('/user-groups/Operators', { permissions: { commands: true } }, asAdmin);
    expect((await t.api.delete('/user-groups/Operators', asAdmin)).status).toBe(204);
    expect((await t.api.get('/me', asOperator)).json.data.groups).toEqual([]);
    const names = (await t.api.get('/user-groups', asAdmin)).json.data.map((g: { name: string }) => g.name);
    expect(names).toEqual(['Administrators']);
    expect((await t.api.delete('/user-groups/Operators', asAdmin)).status).toBe(204);
  });
});

describe.each<[StoreKind, Record<string, unknown>]>([
  ['static', {}],
  ['file', {}],
  ['database:sqlite', {}],
])('user groups without group_details_table (%s)', (store, api) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ store, api });
  });
  afterAll(() => t?.stop());

  test('the API answers 400 and GET /me says group permissions are off', async () => {
    for (const res of [
      await t.api.get('/user-groups', asAdmin),
      await t.api.get('/user-groups/Operators', asAdmin),
      await t.api.put('/user-groups/Operators', { permissions: {} }, asAdmin),
      await t.api.delete('/user-groups/Operators', asAdmin),
    ])
      expect([res.status, res.json.errors[0].code]).toEqual([400, 'ERR_GROUP_PERMISSIONS_OFF']);
    const me = await t.api.get('/me', asAdmin);
    expect(me.json.data).toMatchObject({ effective_user_permissions: ALL, group_permissions_enabled: false });
  });
});
