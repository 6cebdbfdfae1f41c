import { readFile } from 'node:fs/promises';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import {
  ADMIN,
  OPERATOR,
  WRITABLE_STORES,
  startTestServer,
  type TestServer,
} from '../../../../test-support/server.js';

const asAdmin = { auth: { basic: [ADMIN.username, ADMIN.password] as [string, string] } };
const asOperator = { auth: { basic: [OPERATOR.username, OPERATOR.password] as [string, string] } };

/** The second-factor state of every user when svcd has none configured. */
const NO_2FA = { enabled: false, method: null };
describe.each(WRITABLE_STORES)('user API with the %s store', (store) => {
  let t: TestServer;

  /** The file store applies writes on reload (spec 4.3 rule 3); the database store at once. */
  const applyWrites = async () => {
    if (store === 'file') await t.server.reloadUsers();
  };
  /** Changes in force at once answer 204; file writes answer 200 saying they wait for a reload. */
  const changeStatus = store === 'file' ? 200 : 204;

  describe('requests that change nothing, on one svcd', () => {
    beforeAll(async () => {
      t = await startTestServer({ store });
    });
    afterAll(() => t?.stop());

    test('list returns only username, groups and the second-factor state, with meta.count', async () => {
      const res = await t.api.get('/users', asAdmin);
      expect(res.status).toBe(200);
      expect(res.json).toEqual({
        data: [
          { username: 'admin', groups: ['Administrators'], two_fa: NO_2FA },
          { username: 'operator', groups: ['Operators'], two_fa: NO_2FA },
        ],
        meta: { count: 2 },
      });
      expect(res.text).not.toMatch(/password|\$2[aby]\$/);
    });

    test('the list takes sort, filter with wildcards and fields; bad list params are 400', async () => {
      const sorted = await t.api.get('/users?sort=-username', asAdmin);
      expect(sorted.json.data.map((u: { username: string }) => u.username)).toEqual(['operator', 'admin']);
      const filtered = await t.api.get('/users?filter[groups]=admin*,nobody&fields[users]=username', asAdmin);
      expect(filtered.json.data).toEqual([{ username: 'admin' }]);
      const bad = await t.api.get('/users?sort=password&filter[password]=x&fields[users]=password', asAdmin);
      expect(bad.status).toBe(400);
      expect(bad.json.errors.map((e: { code: string }) => e.code)).toEqual([
        'ERR_INVALID_QUERY',
        'ERR_INVALID_QUERY',
        'ERR_INVALID_QUERY',
      ]);
      expect(bad.json.errors[0].title).toMatch(/sort field 'password'/);
    });

    test('members of other groups get 403 on every user route', async () => {
      const calls = [
        t.api.get('/users', asOperator),
        t.api.post('/users', { username: 'x-user', password: 'x-password-1' }, asOperator),
        t.api.put('/users/admin', { groups: [] }, asOperator),
        t.api.delete('/users/admin', asOperator),
        // Authorisation comes before the body: an invalid body does not tell a non-admin what the route wants.
        t.api.post('/users', { username: 5 }, asOperator),
        t.api.put('/users/admin', { groups: 'x' }, asOperator),
      ];
      for (const res of await Promise.all(calls)) {
        expect(res.status).toBe(403);
        expect(res.json.errors[0].code).toBe('ERR_ADMIN_REQUIRED');
      }
    });

    test('every user route is 401 without credentials', async () => {
      const calls = [
        t.api.get('/users'),
        t.api.post('/users', { username: 'x-user', password: 'x-password-1' }),
        t.api.put('/users/admin', { groups: [] }),
        t.api.delete('/users/admin'),
      ];
      for (const res of await Promise.all(calls)) expect(res.status).toBe(401);
    });

    test('bad bodies are 400 with a message naming the problem', async () => {
      const cases: [unknown, RegExp][] = [
        [{ username: 'dave', password: 'dave-secret-1', admin: true }, /unknown field 'admin'/],
        [{ username: 42, password: 'dave-secret-1' }, /username/],
        [{ username: 'dave', password: 'short' }, /password.*8/],
        [{ username: 'dave', password: 'dave-secret-1', groups: 'Ops' }, /groups/],
        [{ username: ' dave', password: 'dave-secret-1' }, /blanks/],
        [{ username: 'da:ve', password: 'dave-secret-1' }, /colon/],
        [{ username: 'x'.repeat(151), password: 'dave-secret-1' }, /150/],
        [{ password: 'dave-secret-1' }, /username/],
        [[], /expected object/],
      ];
      for (const [body, message] of cases) {
        const res = await t.api.post('/users', body, asAdmin);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.json.errors[0].title, JSON.stringify(body)).toMatch(message);
      }
      const nothing = await t.api.put('/users/operator', {}, asAdmin);
      expect(nothing.status).toBe(400);
      expect(nothing.json.errors[0].code).toBe('ERR_NOTHING_TO_CHANGE');
    });

    test('malformed JSON, an empty body, a wrong content type and an oversized body are 4xx', async () => {
      const malformed = await t.api.request('POST', '/users', { ...asAdmin, rawBody: '{"username": "x",' });
      expect(malformed.status).toBe(400);
      expect(malformed.json.errors[0].code).toBe('ERR_INVALID_JSON');
      const empty = await t.api.request('POST', '/users', { ...asAdmin, rawBody: '' });
      expect(empty.status).toBe(400);
      expect(empty.json.errors[0].code).toBe('ERR_MISSING_BODY');
      const text = await t.api.request('POST', '/users', {
        ...asAdmin,
        rawBody: 'hello',
        contentType: 'text/plain',
      });
      expect(text.status).toBe(400);
      expect(text.json.errors[0].code).toBe('ERR_UNSUPPORTED_MEDIA_TYPE');
      const huge = await t.api.post(
        '/users',
        { username: 'big', password: 'x'.repeat(2 * 1024 * 1024) },
        asAdmin,
      );
      expect(huge.status).toBe(413);
      expect(huge.json.errors[0].code).toBe('ERR_BODY_TOO_LARGE');
      const poisoned = await t.api.request('POST', '/users', {
        ...asAdmin,
        rawBody: '{"username":"p","password":"p-secret-12","__proto__":{"x":1}}',
      });
      expect(poisoned.status).toBe(400);
      const list = await t.api.get('/users', asAdmin);
      expect(list.json.data.map((u: { username: string }) => u.username)).toEqual(['admin', 'operator']);
    });
  });

  describe('changes, each on a fresh svcd', () => {
    beforeEach(async () => {
      t = await startTestServer({ store });
    });
    afterEach(() => t?.stop());

    test('the list takes page[limit] and page[offset]; meta.count is the total before paging', async () => {
      for (const name of ['user-a', 'user-b', 'user-c']) {
        expect(
          (await t.api.post('/users', { username: name, password: 'paging-secret' }, asAdmin)).status,
        ).toBe(201);
      }
      await applyWrites();
      const names = (res: { json: { data: { username: string }[] } }) => res.json.data.map((u) => u.username);
      const first = await t.api.get('/users?page[limit]=2', asAdmin);
      expect(first.status).toBe(200);
      expect(names(first)).toEqual(['admin', 'operator']);
      expect(first.json.meta).toEqual({ count: 5 });
      const rest = await t.api.get('/users?page[limit]=2&page[offset]=2', asAdmin);
      expect(names(rest)).toEqual(['user-a', 'user-b']);
      expect(rest.json.meta).toEqual({ count: 5 });
      const filtered = await t.api.get(
        '/users?filter[username]=user-*&sort=-username&page[offset]=1',
        asAdmin,
      );
      expect(names(filtered)).toEqual(['user-b', 'user-a']);
      expect(filtered.json.meta).toEqual({ count: 3 });
      const past = await t.api.get('/users?page[offset]=10', asAdmin);
      expect(past.json).toEqual({ data: [], meta: { count: 5 } });

      for (const query of [
        'page[limit]=0',
        'page[limit]=501',
        'page[limit]=x',
        'page[offset]=-1',
        'page[size]=2',
      ]) {
        const bad = await t.api.get(`/users?${query}`, asAdmin);
        expect(bad.status, query).toBe(400);
        expect(bad.json.errors[0].code, query).toBe('ERR_INVALID_QUERY');
        expect(bad.json.errors[0].title, query).toMatch(/page\[/);
      }
    });

    test('create, then log in as the new user; the password is stored as bcrypt', async () => {
      const created = await t.api.post(
        '/users',
        { username: 'carol', password: 'carol-secret-1', groups: ['Ops'] },
        asAdmin,
      );
      expect(created.status).toBe(201);
      expect(created.json.data).toEqual({ username: 'carol', groups: ['Ops'] });
      expect(created.text).not.toMatch(/carol-secret/);
      await applyWrites();
      expect(await t.api.login('carol', 'carol-secret-1')).toMatch(/\./);
      if (t.userFile) {
        const saved = JSON.parse(await readFile(t.userFile, 'utf8')) as {
          username: string;
          password: string;
        }[];
        expect(saved.find((u) => u.username === 'carol')?.password).toMatch(/^\$2[aby]\$10\$/);
      }
    });

    test('a duplicate username is 409', async () => {
      const res = await t.api.post('/users', { username: 'operator', password: 'another-secret' }, asAdmin);
      expect(res.status).toBe(409);
      expect(res.json.errors[0].code).toBe('ERR_USER_EXISTS');
    });

    test('a name that differs from an existing one only by case or compatibility form is 409', async () => {
      const cases: [string, string][] = [
        ['ADMIN', 'admin'],
        ['ａｄｍｉｎ', 'admin'],
        ['Operator', 'operator'],
        ['ope\u200brator', 'operator'],
      ];
      for (const [name, existing] of cases) {
        const res = await t.api.post('/users', { username: name, password: 'look-alike-1' }, asAdmin);
        expect(res.status, name).toBe(409);
        expect(res.json.errors[0].code, name).toBe('ERR_USER_EXISTS');
        expect(res.json.errors[0].title, name).toBe(
          `User '${name}' is too similar to the existing user '${existing}'`,
        );
      }
      await applyWrites();
      const list = await t.api.get('/users', asAdmin);
      expect(list.json.data.map((u: { username: string }) => u.username)).toEqual(['admin', 'operator']);
      // Logins name the user exactly: ADMIN is not admin.
      expect((await t.api.get('/status', { auth: { basic: ['ADMIN', ADMIN.password] } })).status).toBe(401);
    });

    test('names are taken in NFC; control, bidi and lone-surrogate characters are 400', async () => {
      const decomposed = 'Zoe\u0308'; // e + combining diaeresis
      const created = await t.api.post(
        '/users',
        { username: decomposed, password: 'zoe-secret-12', groups: ['Cafe\u0301'] },
        asAdmin,
      );
      expect(created.status).toBe(201);
      expect(created.json.data).toEqual({ username: 'Zoë', groups: ['Café'] });
      await applyWrites();
      const list = await t.api.get('/users?filter[username]=zo*', asAdmin);
      expect(list.json.data).toEqual([{ username: 'Zoë', groups: ['Café'], two_fa: NO_2FA }]);
      // Either form logs in and names the user in the path.
      for (const form of ['Zoë', decomposed]) {
        expect((await t.api.get('/status', { auth: { basic: [form, 'zoe-secret-12'] } })).status, form).toBe(
          200,
        );
      }
      const put = await t.api.put(`/users/${encodeURIComponent(decomposed)}`, { groups: ['Ops'] }, asAdmin);
      expect(put.status).toBe(changeStatus);

      const refused: [string, RegExp][] = [
        ['bad\u0085name', /control characters/],
        ['bad\u0007name', /control characters/],
        ['evil\u202egnp.exe', /bidirectional/],
        ['iso\u2066late', /bidirectional/],
        ['lone\ud800', /lone surrogate/],
      ];
      for (const [name, message] of refused) {
        const res = await t.api.post('/users', { username: name, password: 'refused-secret' }, asAdmin);
        expect(res.status, JSON.stringify(name)).toBe(400);
        expect(res.json.errors[0].title, JSON.stringify(name)).toMatch(/^username: /);
        expect(res.json.errors[0].title, JSON.stringify(name)).toMatch(message);
        const group = await t.api.put('/users/operator', { groups: ['Ops', name] }, asAdmin);
        expect(group.status, JSON.stringify(name)).toBe(400);
        expect(group.json.errors[0].title, JSON.stringify(name)).toMatch(/^groups\.1: /);
        expect(group.json.errors[0].title, JSON.stringify(name)).toMatch(message);
      }
      for (const group of ['', ' Ops', 'x'.repeat(151)]) {
        const res = await t.api.put('/users/operator', { groups: [group] }, asAdmin);
        expect(res.status, JSON.stringify(group)).toBe(400);
      }
    });

    test(`PUT and DELETE answer ${store === 'file' ? '200 saying a reload is needed' : '204'}`, async () => {
      const put = await t.api.put('/users/operator', { groups: ['Auditors'] }, asAdmin);
      const del = await t.api.delete('/users/operator', asAdmin);
      if (store === 'file') {
        const meta = { takes_effect: 'after svcd reloads the user file (SIGUSR1) or restarts' };
        expect(put.status).toBe(200);
        expect(put.json).toEqual({ data: { username: 'operator', groups: ['Auditors'] }, meta });
        expect(del.status).toBe(200);
        expect(del.json).toEqual({ data: { username: 'operator' }, meta });
        // Nothing has changed yet: the operator still logs in.
        expect((await t.api.get('/status', asOperator)).status).toBe(200);
      } else {
        expect([put.status, put.text, del.status, del.text]).toEqual([204, '', 204, '']);
        expect((await t.api.get('/status', asOperator)).status).toBe(401);
      }
    });

    test('PUT with groups only keeps the password; groups replace the whole list', async () => {
      const res = await t.api.put('/users/operator', { groups: ['Auditors', 'Viewers'] }, asAdmin);
      expect(res.status).toBe(changeStatus);
      await applyWrites();
      const list = await t.api.get('/users', asAdmin);
      expect(list.json.data).toContainEqual({
        username: 'operator',
        groups: ['Auditors', 'Viewers'],
        two_fa: NO_2FA,
      });
      expect((await t.api.get('/status', asOperator)).status).toBe(200);
    });

    test('PUT with password only keeps the groups; a token issued before keeps working', async () => {
      const oldToken = await t.api.login(OPERATOR.username, OPERATOR.password);
      const res = await t.api.put('/users/operator', { password: 'brand-new-secret' }, asAdmin);
      expect(res.status).toBe(changeStatus);
      await applyWrites();
      expect((await t.api.get('/status', asOperator)).status).toBe(401);
      expect((await t.api.get('/status', { auth: { basic: ['operator', 'brand-new-secret'] } })).status).toBe(
        200,
      );
      expect((await t.api.get('/status', { auth: { bearer: oldToken } })).status).toBe(200);
      const list = await t.api.get('/users', asAdmin);
      expect(list.json.data).toContainEqual({ username: 'operator', groups: ['Operators'], two_fa: NO_2FA });
    });

    test('removal from Administrators takes effect at once for existing tokens', async () => {
      await t.api.put('/users/operator', { groups: ['Administrators'] }, asAdmin);
      await applyWrites();
      const token = await t.api.login(OPERATOR.username, OPERATOR.password);
      expect((await t.api.get('/users', { auth: { bearer: token } })).status).toBe(200);
      await t.api.put('/users/operator', { groups: ['Operators'] }, asAdmin);
      await applyWrites();
      const after = await t.api.get('/users', { auth: { bearer: token } });
      expect(after.status).toBe(403);
      expect(after.json.errors[0].code).toBe('ERR_ADMIN_REQUIRED');
    });

    test('the last Administrators member can be neither removed from the group nor deleted', async () => {
      const demote = await t.api.put('/users/admin', { groups: ['Operators'] }, asAdmin);
      expect(demote.status).toBe(409);
      expect(demote.json.errors[0].code).toBe('ERR_LAST_ADMINISTRATOR');
      const remove = await t.api.delete('/users/admin', asAdmin);
      expect(remove.status).toBe(409);
      // With a second administrator, the first may go.
      await t.api.put('/users/operator', { groups: ['Administrators'] }, asAdmin);
      expect((await t.api.delete('/users/admin', asAdmin)).status).toBe(changeStatus);
    });

    test('delete removes the user; unknown users are 404', async () => {
      expect((await t.api.delete('/users/operator', asAdmin)).status).toBe(changeStatus);
      await applyWrites();
      expect((await t.api.get('/status', asOperator)).status).toBe(401);
      expect((await t.api.delete('/users/operator', asAdmin)).status).toBe(404);
      expect((await t.api.put('/users/ghost', { groups: [] }, asAdmin)).status).toBe(404);
    });
  });
});

describe('user file writes wait for a reload', () => {
  test('a created user is listed only after reload', async () => {
    const t = await startTestServer({ store: 'file' });
    try {
      await t.api.post('/users', { username: 'erin', password: 'erin-secret-1' }, asAdmin);
      const before = await t.api.get('/users', asAdmin);
      expect(before.json.data.map((u: { username: string }) => u.username)).not.toContain('erin');
      await t.server.reloadUsers();
      const after = await t.api.get('/users', asAdmin);
      expect(after.json.data.map((u: { username: string }) => u.username)).toContain('erin');
    } finally {
      await t.stop();
    }
  });
});

describe('static user store', () => {
  test('the user API answers 400 explaining why', async () => {
    const t = await startTestServer({ store: 'static', users: [ADMIN] });
    try {
      for (const res of [
        await t.api.get('/users', asAdmin),
        await t.api.post('/users', { username: 'x-user', password: 'x-password-1' }, asAdmin),
        await t.api.put('/users/admin', { groups: [] }, asAdmin),
        await t.api.delete('/users/admin', asAdmin),
      ]) {
        expect(res.status).toBe(400);
        expect(res.json.errors[0].code).toBe('ERR_STATIC_USER_STORE');
        expect(res.json.errors[0].detail).toMatch(/auth_file/);
      }
    } finally {
      await t.stop();
    }
  });
});
