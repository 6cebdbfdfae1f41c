import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Auth } from '../../../../test-support/api-client.js';
import {
  ADMIN,
  OPERATOR,
  startTestServer,
  type SeedUser,
  type StoreKind,
  type TestServer,
} from '../../../../test-support/server.js';

const SECRETS: SeedUser = { username: 'keeper', password: 'keeper-secret-1', groups: ['Secret-Team'] };
const asAdmin: Auth = { basic: [ADMIN.username, ADMIN.password] };
const asOperator: Auth = { basic: [OPERATOR.username, OPERATOR.password] };
const asKeeper: Auth = { basic: [SECRETS.username, SECRETS.password] };
/** 32 bytes in UTF-8 (18 characters): the longest password allowed. */
const PASSWORD = '\u00fc'.repeat(14) + 'pass';

const ENTRY = { key: 'db-password', value: 'hunter2-plaintext', type: 'secret' } as const;

/** The five entry routes, each with a body where it takes one. */
const ENTRY_ROUTES: [string, string, unknown?][] = [
  ['GET', '/vault'],
  ['GET', '/vault/1'],
  ['POST', '/vault', ENTRY],
  ['PUT', '/vault/1', ENTRY],
  ['DELETE', '/vault/1'],
];

const STORES: StoreKind[] = ['database:sqlite', 'database:postgres'];

describe.each(STORES)('vault on %s', (store) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ store, users: [ADMIN, OPERATOR, SECRETS] });
  });
  afterAll(() => t?.stop());

  const status = async (auth: Auth = asAdmin) => {
    const res = await t.api.get('/vault-admin', { auth });
    expect(res.status).toBe(200);
    return res.json.data as { init: string; status: string };
  };

  const entryRequestsAnswer = async (code: string) => {
    for (const [method, path, body] of ENTRY_ROUTES) {
      const res = await t.api.request(method, path, { auth: asAdmin, body });
      expect({ method, path, status: res.status, code: res.json?.errors?.[0]?.code }).toEqual({
        method,
        path,
        status: 409,
        code,
      });
    }
  };

  test('goes through its states: uninitialized, unlocked, locked, unlocked again, and locked after a restart', async () => {
    expect(await status()).toEqual({ init: 'uninitialized', status: 'locked' });
    expect(await status(asOperator)).toEqual({ init: 'uninitialized', status: 'locked' });
    await entryRequestsAnswer('ERR_VAULT_NOT_INITIALIZED');
    const notInit = await t.api.post('/vault-admin/sesame', { password: PASSWORD }, { auth: asAdmin });
    expect([notInit.status, notInit.json.errors[0].code]).toEqual([409, 'ERR_VAULT_NOT_INITIALIZED']);
    const lockNotInit = await t.api.delete('/vault-admin/sesame', { auth: asAdmin });
    expect(lockNotInit.status).toBe(409);

    // 4 to 32 bytes, counted in UTF-8: 'éa' is 3 bytes, 'é' × 17 is 34
    for (const password of ['abc', '\u00e9a', 'x'.repeat(33), '\u00e9'.repeat(17), '']) {
      const res = await t.api.post('/vault-admin/init', { password }, { auth: asAdmin });
      expect(res.status).toBe(400);
      expect(res.json.errors[0].title).toMatch(/^password: is too (short|long)/);
    }
    const noPassword = await t.api.post('/vault-admin/init', {}, { auth: asAdmin });
    expect([noPassword.status, noPassword.json.errors[0].title]).toEqual([
      400,
      expect.stringMatching(/^password/),
    ]);
    expect(await status()).toEqual({ init: 'uninitialized', status: 'locked' });

    const init = await t.api.post('/vault-admin/init', { password: PASSWORD }, { auth: asAdmin });
    expect([init.status, init.text]).toEqual([201, '']);
    expect(await status()).toEqual({ init: 'setup-completed', status: 'unlocked' });
    const again = await t.api.post('/vault-admin/init', { password: PASSWORD }, { auth: asAdmin });
    expect([again.status, again.json.errors[0].code]).toEqual([409, 'ERR_VAULT_ALREADY_INITIALIZED']);

    const created = await t.api.post('/vault', ENTRY, { auth: asAdmin });
    expect(created.status).toBe(201);
    const id = created.json.data.id as number;

    const lock = await t.api.delete('/vault-admin/sesame', { auth: asAdmin });
    expect([lock.status, lock.text]).toEqual([204, '']);
    expect(await status()).toEqual({ init: 'setup-completed', status: 'locked' });
    await entryRequestsAnswer('ERR_VAULT_LOCKED');
    const lockAgain = await t.api.delete('/vault-admin/sesame', { auth: asAdmin });
    expect(lockAgain.status).toBe(409);

    const wrong = await t.api.post(
      '/vault-admin/sesame',
      { password: 'not-the-password' },
      { auth: asAdmin },
    );
    expect([wrong.status, wrong.json.errors[0].code]).toEqual([401, 'ERR_VAULT_WRONG_PASSWORD']);
    expect(await status()).toEqual({ init: 'setup-completed', status: 'locked' });
    await entryRequestsAnswer('ERR_VAULT_LOCKED');

    const unlock = await t.api.post('/vault-admin/sesame', { password: PASSWORD }, { auth: asAdmin });
    expect([unlock.status, unlock.text]).toEqual([201, '']);
    expect(await status()).toEqual({ init: 'setup-completed', status: 'unlocked' });
    const unlockAgain = await t.api.post('/vault-admin/sesame', { password: PASSWORD }, { auth: asAdmin });
    expect([unlockAgain.status, unlockAgain.json.errors[0].code]).toEqual([
      409,
      'ERR_VAULT_ALREADY_UNLOCKED',
    ]);
    expect((await t.api.get(`/vault/${id}`, { auth: asAdmin })).json.data.value).toBe(ENTRY.value);

    await t.restart();
    expect(await status()).toEqual({ init: 'setup-completed', status: 'locked' });
    await entryRequestsAnswer('ERR_VAULT_LOCKED');
    const reinit = await t.api.post('/vault-admin/init', { password: 'another-pass' }, { auth: asAdmin });
    expect(reinit.status).toBe(409);
    const wrongAfter = await t.api.post(
      '/vault-admin/sesame',
      { password: 'another-pass' },
      { auth: asAdmin },
    );
    expect(wrongAfter.status).toBe(401);
    expect((await t.api.post('/vault-admin/sesame', { password: PASSWORD }, { auth: asAdmin })).status).toBe(
      201,
    );
    const read = await t.api.get(`/vault/${id}`, { auth: asAdmin });
    expect(read.json.data).toMatchObject({ id, ...ENTRY, client_id: '', required_group: '' });
    expect((await t.api.delete(`/vault/${id}`, { auth: asAdmin })).status).toBe(204);
  });

  describe('once unlocked', () => {
    beforeAll(async () => {
      const s = await status();
      if (s.init === 'uninitialized') {
        expect(
          (await t.api.post('/vault-admin/init', { password: PASSWORD }, { auth: asAdmin })).status,
        ).toBe(201);
      } else if (s.status === 'locked') {
        expect(
          (await t.api.post('/vault-admin/sesame', { password: PASSWORD }, { auth: asAdmin })).status,
        ).toBe(201);
      }
    });

    test('stores, reads, replaces and deletes an entry; the list never holds a value', async () => {
      const body = {
        client_id: 'client-a',
        required_group: '',
        key: 'api-token',
        value: 'tok-Ünïcode-✓',
        type: 'text',
      };
      const created = await t.api.post('/vault', body, { auth: asOperator });
      expect(created.status).toBe(201);
      expect(created.headers.get('content-type')).toMatch(/^application\/json/);
      const id = created.json.data.id as number;
      expect(Number.isInteger(id)).toBe(true);
      expect(created.json).toEqual({ data: { id } });

      const read = await t.api.get(`/vault/${id}`, { auth: asAdmin });
      expect(read.status).toBe(200);
      expect(read.json.data).toEqual({
        id,
        ...body,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
        updated_at: read.json.data.created_at,
        created_by: OPERATOR.username,
        updated_by: OPERATOR.username,
      });

      const list = await t.api.get('/vault?filter[key]=api-token', { auth: asOperator });
      expect(list.status).toBe(200);
      expect(list.json).toEqual({
        data: [
          {
            id,
            client_id: 'client-a',
            created_by: 'operator',
            created_at: read.json.data.created_at,
            key: 'api-token',
          },
        ],
        meta: { count: 1 },
      });
      expect(list.text).not.toContain(body.value);

      const partial = await t.api.put(`/vault/${id}`, { key: 'api-token', type: 'text' }, { auth: asAdmin });
      expect([partial.status, partial.json.errors[0].title]).toEqual([400, expect.stringMatching(/^value/)]);

      const replacement = {
        client_id: 'client-b',
        required_group: '',
        key: 'api-token-2',
        value: 'new-value',
        type: 'markdown',
      };
      const put = await t.api.put(`/vault/${id}`, replacement, { auth: asAdmin });
      expect([put.status, put.json]).toEqual([200, { data: { id } }]);
      const after = (await t.api.get(`/vault/${id}`, { auth: asOperator })).json.data;
      expect(after).toMatchObject({ ...replacement, created_by: 'operator', updated_by: 'admin' });
      expect(after.created_at).toBe(read.json.data.created_at);

      expect((await t.api.delete(`/vault/${id}`, { auth: asOperator })).status).toBe(204);
      for (const [method, path, b] of [
        ['GET', `/vault/${id}`],
        ['PUT', `/vault/${id}`, replacement],
        ['DELETE', `/vault/${id}`],
      ] as [string, string, unknown?][]) {
        const res = await t.api.request(method, path, { auth: asAdmin, body: b });
        expect([method, res.status, res.json.errors[0].code]).toEqual([
          method,
          404,
          'ERR_VAULT_ENTRY_NOT_FOUND',
        ]);
      }
    });

    test('refuses bad bodies and ids with a 400 naming the problem', async () => {
      const cases: [unknown, RegExp][] = [
        [{ value: 'v', type: 'text' }, /^key/],
        [{ key: 'k', type: 'text' }, /^value/],
        [{ key: 'k', value: 'v' }, /^type/],
        [{ key: 'k', value: 'v', type: 'password' }, /^type/],
        [{ key: '  ', value: 'v', type: 'text' }, /^key: must not be empty/],
        [{ key: 'k', value: '', type: 'text' }, /^value: must not be empty/],
        [{ key: 'k', value: 'v', type: 'text', client_id: 7 }, /^client_id/],
        [{ key: 'k', value: 'v', type: 'text', extra: 1 }, /unknown field 'extra'/],
        [{ key: 'k'.repeat(256), value: 'v', type: 'text' }, /^key: must be at most 255/],
      ];
      for (const [body, title] of cases) {
        const res = await t.api.post('/vault', body, { auth: asAdmin });
        expect([res.status, res.json.errors[0].title]).toEqual([400, expect.stringMatching(title)]);
      }
      for (const id of ['abc', '0', '-1', '1.5', '99999999999']) {
        const res = await t.api.get(`/vault/${id}`, { auth: asAdmin });
        expect([id, res.status, res.json.errors[0].title]).toEqual([
          id,
          400,
          expect.stringMatching(/^id: must be a positive integer/),
        ]);
      }
      const list = await t.api.get('/vault?sort=value', { auth: asAdmin });
      expect([list.status, list.json.errors[0].title]).toEqual([
        400,
        expect.stringMatching(/unsupported sort field 'value'/),
      ]);
      const filter = await t.api.get('/vault?filter[created_at]=2024', { auth: asAdmin });
      expect(filter.status).toBe(400);
    });

    test('(client_id, key) is unique; a missing client_id counts as the empty string', async () => {
      const first = await t.api.post(
        '/vault',
        { key: 'shared-key', value: 'one', type: 'string' },
        { auth: asAdmin },
      );
      expect(first.status).toBe(201);
      const dup = await t.api.post(
        '/vault',
        { key: 'shared-key', value: 'two', type: 'string' },
        { auth: asAdmin },
      );
      expect([dup.status, dup.json.errors[0].code]).toEqual([409, 'ERR_VAULT_ENTRY_EXISTS']);
      const explicitEmpty = await t.api.post(
        '/vault',
        { client_id: '', key: 'shared-key', value: 'x', type: 'string' },
        { auth: asAdmin },
      );
      expect(explicitEmpty.status).toBe(409);
      const other = await t.api.post(
        '/vault',
        { client_id: 'c1', key: 'shared-key', value: 'three', type: 'string' },
        { auth: asAdmin },
      );
      expect(other.status).toBe(201);
      const clash = await t.api.put(
        `/vault/${other.json.data.id}`,
        { key: 'shared-key', value: 'four', type: 'string' },
        { auth: asAdmin },
      );
      expect([clash.status, clash.json.errors[0].code]).toEqual([409, 'ERR_VAULT_ENTRY_EXISTS']);
      expect((await t.api.get(`/vault/${other.json.data.id}`, { auth: asAdmin })).json.data.value).toBe(
        'three',
      );
      for (const id of [first.json.data.id, other.json.data.id])
        await t.api.delete(`/vault/${id}`, { auth: asAdmin });
    });

    test('an entry with required_group is read, changed and deleted only by members of that group', async () => {
      const body = {
        key: 'team-secret',
        value: 'only-for-the-team',
        type: 'secret',
        required_group: 'Secret-Team',
      };
      const created = await t.api.post('/vault', body, { auth: asKeeper });
      expect(created.status).toBe(201);
      const id = created.json.data.id as number;

      for (const auth of [asOperator, asAdmin]) {
        for (const [method, b] of [['GET'], ['PUT', { ...body, value: 'overwritten' }], ['DELETE']] as [
          string,
          unknown?,
        ][]) {
          const res = await t.api.request(method, `/vault/${id}`, { auth, body: b });
          expect([method, res.status, res.json.errors[0].code]).toEqual([
            method,
            403,
            'ERR_VAULT_GROUP_REQUIRED',
          ]);
          expect(res.text).not.toContain(body.value);
        }
      }
      // The list shows that the entry exists, never its value.
      const list = await t.api.get('/vault?filter[key]=team-secret', { auth: asOperator });
      expect(list.json.data).toEqual([expect.objectContaining({ id, key: 'team-secret' })]);
      expect(list.text).not.toContain(body.value);

      const read = await t.api.get(`/vault/${id}`, { auth: asKeeper });
      expect(read.json.data).toMatchObject(body);
      expect(
        (await t.api.put(`/vault/${id}`, { ...body, value: 'changed-by-member' }, { auth: asKeeper })).status,
      ).toBe(200);
      expect((await t.api.get(`/vault/${id}`, { auth: asKeeper })).json.data.value).toBe('changed-by-member');
      expect((await t.api.delete(`/vault/${id}`, { auth: asKeeper })).status).toBe(204);
    });

    test('lists with sort, filter and pages', async () => {
      const ids: number[] = [];
      for (const [client_id, key] of [
        ['c2', 'beta'],
        ['c1', 'alpha'],
        ['c3', 'gamma'],
      ]) {
        const res = await t.api.post(
          '/vault',
          { client_id, key, value: `v-${key}`, type: 'text' },
          { auth: asAdmin },
        );
        ids.push(res.json.data.id as number);
      }
      const keys = async (query: string) =>
        ((await t.api.get(`/vault?${query}`, { auth: asAdmin })).json.data as { key: string }[]).map(
          (e) => e.key,
        );
      expect(await keys('filter[client_id]=c1,c3&sort=-key')).toEqual(['gamma', 'alpha']);
      expect(await keys('filter[key]=*a*&sort=client_id')).toEqual(['alpha', 'beta', 'gamma']);
      expect(await keys(`filter[id]=${ids[0]}`)).toEqual(['beta']);
      expect(await keys('filter[created_by]=admin&sort=key&page[limit]=2&page[offset]=1')).toEqual([
        'beta',
        'gamma',
      ]);
      const page = await t.api.get('/vault?page[limit]=1&filter[created_by]=admin', { auth: asAdmin });
      expect(page.json.meta.count).toBe(3);
      const fields = await t.api.get('/vault?fields[vault]=id,key&filter[key]=alpha', { auth: asAdmin });
      expect(fields.json.data).toEqual([{ id: ids[1], key: 'alpha' }]);
      for (const id of ids) await t.api.delete(`/vault/${id}`, { auth: asAdmin });
    });
  });

  test('init, unlock and lock are for Administrators only (403), the status for every user', async () => {
    for (const [method, path, body] of [
      ['POST', '/vault-admin/init', { password: PASSWORD }],
      ['POST', '/vault-admin/sesame', { password: PASSWORD }],
      ['DELETE', '/vault-admin/sesame'],
      // Authorisation comes before the body.
      ['POST', '/vault-admin/init', {}],
      ['POST', '/vault-admin/sesame', { password: 5 }],
    ] as [string, string, unknown?][]) {
      const res = await t.api.request(method, path, { auth: asOperator, body });
      expect([method, path, res.status, res.json.errors[0].code]).toEqual([
        method,
        path,
        403,
        'ERR_ADMIN_REQUIRED',
      ]);
    }
    expect((await t.api.get('/vault-admin', { auth: asKeeper })).status).toBe(200);
  });

  test('every vault route answers 401 without credentials', async () => {
    const routes: [string, string, unknown?][] = [
      ['GET', '/vault-admin'],
      ['POST', '/vault-admin/init', { password: PASSWORD }],
      ['POST', '/vault-admin/sesame', { password: PASSWORD }],
      ['DELETE', '/vault-admin/sesame'],
      ...ENTRY_ROUTES,
    ];
    for (const [method, path, body] of routes) {
      const res = await t.api.request(method, path, { body });
      expect([method, path, res.status, res.json.errors[0].code]).toEqual([
        method,
        path,
        401,
        'ERR_AUTH_REQUIRED',
      ]);
    }
  });

  test('of several inits at once exactly one wins; the others answer 409', async () => {
    const fresh = await startTestServer({ store, users: [ADMIN] });
    try {
      const answers = await Promise.all(
        ['pw-one', 'pw-two', 'pw-three'].map((password) =>
          fresh.api.post('/vault-admin/init', { password }, { auth: asAdmin }),
        ),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409]);
      const winner = ['pw-one', 'pw-two', 'pw-three'][answers.findIndex((a) => a.status === 201)];
      expect((await fresh.api.delete('/vault-admin/sesame', { auth: asAdmin })).status).toBe(204);
      const unlocks = await Promise.all(
        [winner, winner].map((password) =>
          fresh.api.post('/vault-admin/sesame', { password }, { auth: asAdmin }),
        ),
      );
      expect(unlocks.map((a) => a.status).sort()).toEqual([201, 409]);
    } finally {
      await fresh.stop();
    }
  });
});
