/**
 * Every operation of the served OpenAPI document × every kind of caller → the status the rules below expect.
 * The operations are discovered from the document; who may call what is stated once, in `expectedFor`, from
 * the document's own declarations (public, Basic only, login token, Administrators only) and the token scopes.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { basicHeader } from '../../../../test-support/api-client.js';
import { ADMIN, OPERATOR, startTestServer, type TestServer } from '../../../../test-support/server.js';
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

type Caller =
  | 'none'
  | 'wrong password'
  | 'wrong bearer'
  | 'non-admin'
  | 'admin'
  | 'read token'
  | 'read+write token'
  | 'clients-auth token'
  | 'login JWT';

/** 'allowed': past authentication and authorisation (any status but 401/403, below 500). */
type Expected = 401 | 403 | 'allowed';

const READ_METHODS = new Set(['GET']);

/** The rules, once. */
function expectedFor(op: ServedOperation, caller: Caller): Expected {
  if (isPublic(op)) return 'allowed';
  if (caller === 'none' || caller === 'wrong password' || caller === 'wrong bearer') return 401;
  // Login takes a password: neither an API token as Basic password nor a Bearer token mints a session.
  if (isBasicOnly(op) && caller !== 'admin' && caller !== 'non-admin') return 401;
  // Without group_details_table a non-admin has every permission but `auditlog` (permission-matrix.test.ts
  // covers the permissions with group details).
  if (caller === 'non-admin')
    return isAdministratorsOnly(op) || permissionOf(op) === 'auditlog' ? 403 : 'allowed';
  if (caller === 'read token' && !READ_METHODS.has(op.method)) return 403;
  if (caller === 'clients-auth token' && !op.path.includes('/clients-auth')) return 403;
  // The tokens and the JWT are the admin's, so nothing else refuses them.
  return 'allowed';
}

const CALLERS: readonly Caller[] = [
  'none',
  'wrong password',
  'wrong bearer',
  'non-admin',
  'admin',
  'read token',
  'read+write token',
  'clients-auth token',
  'login JWT',
];

describe('the auth matrix over the served document', () => {
  let t: TestServer;
  let app: FastifyInstance;
  let operations: ServedOperation[];
  const tokens = new Map<string, string>();

  beforeAll(async () => {
    t = await startTestServer({
      store: 'database:sqlite',
      clientAuth: { source: 'table', entries: { 'matrix-agents': 'matrix-secret-1' } },
      server: { auth_write: true },
      // No ban: the wrong-password caller must keep getting 401, not lock the address out.
      api: { enable_ws_test_endpoints: true, max_failed_login: 0 },
    });
    app = t.server.apiApp as FastifyInstance;
    operations = await servedOperations(app);
    for (const scope of ['read', 'read+write', 'clients-auth']) {
      const res = await t.api.post('/me/tokens', { name: `matrix ${scope}`, scope }, { auth: adminBasic() });
      expect(res.status).toBe(201);
      tokens.set(scope, res.json.data.token as string);
    }
  });
  afterAll(() => t?.stop());

  const adminBasic = () => ({ basic: [ADMIN.username, ADMIN.password] as [string, string] });

  /** The Authorization header of a caller; the JWT is fresh each time, as DELETE /logout revokes it. */
  async function authorization(caller: Caller): Promise<string | undefined> {
    switch (caller) {
      case 'none':
        return undefined;
      case 'wrong password':
        return basicHeader(ADMIN.username, 'not-the-password');
      case 'wrong bearer':
        return 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9.c2lnbmF0dXJl';
      case 'non-admin':
        return basicHeader(OPERATOR.username, OPERATOR.password);
      case 'admin':
        return basicHeader(ADMIN.username, ADMIN.password);
      case 'read token':
        return basicHeader(ADMIN.username, tokens.get('read') ?? '');
      case 'read+write token':
        return basicHeader(ADMIN.username, tokens.get('read+write') ?? '');
      case 'clients-auth token':
        return basicHeader(ADMIN.username, tokens.get('clients-auth') ?? '');
      case 'login JWT': {
        const res = await app.inject({
          method: 'GET',
          url: '/api/v1/login',
          headers: { authorization: basicHeader(ADMIN.username, ADMIN.password) },
        });
        expect(res.statusCode).toBe(200);
        return `Bearer ${res.json<{ data: { token: string } }>().data.token}`;
      }
    }
  }

  /** A request that passes authentication changes nothing: ids name nothing, bodies are empty objects. */
  async function call(op: ServedOperation, caller: Caller) {
    const auth = await authorization(caller);
    return app.inject({
      method: op.method as 'GET',
      url: concretePath(op.path, () => 'matrix-none'),
      headers: {
        ...(auth ? { authorization: auth } : {}),
        ...(op.operation.requestBody ? { 'content-type': 'application/json' } : {}),
      },
      ...(op.operation.requestBody ? { payload: '{}' } : {}),
    });
  }

  test('every operation answers every caller as the rules say', async () => {
    expect(operations.length).toBeGreaterThan(50);
    const mismatches: string[] = [];
    let checked = 0;
    for (const op of operations) {
      // The callers of one operation are independent of each other: asked at once.
      const answers = await Promise.all(CALLERS.map((caller) => call(op, caller)));
      for (const [i, caller] of CALLERS.entries()) {
        const res = answers[i] as Awaited<ReturnType<typeof call>>;
        const expected = expectedFor(op, caller);
        const status = res.statusCode;
        const fits = expected === 'allowed' ? status !== 401 && status !== 403 : status === expected;
        if (!fits)
          mismatches.push(`${label(op)} as ${caller}: ${status}, expected ${expected} (${res.body})`);
        const wrong = violation(answerOf(res));
        if (wrong) mismatches.push(`${label(op)} as ${caller}: ${wrong}`);
        checked += 1;
      }
    }
    expect(mismatches).toEqual([]);
    expect(checked).toBe(operations.length * CALLERS.length);
  });

  test('the rules are not vacuous: each outcome occurs for several operations', () => {
    const outcomes = operations.flatMap((op) => CALLERS.map((caller) => String(expectedFor(op, caller))));
    const count = (outcome: string) => outcomes.filter((o) => o === outcome).length;
    expect(operations.filter(isAdministratorsOnly).length).toBeGreaterThan(8);
    expect(count('403')).toBeGreaterThan(40);
    expect(count('401')).toBeGreaterThan(150);
    expect(count('allowed')).toBeGreaterThan(150);
  });

  test('without credentials only login, the document, the docs page and the test page are not 401-guarded', async () => {
    const answeringWithout: string[] = [];
    for (const op of operations) {
      const res = await call(op, 'none');
      if (res.statusCode !== 401) answeringWithout.push(label(op));
      else expect(res.json<{ errors: { code: string }[] }>().errors[0]?.code, label(op)).toBeTruthy();
    }
    expect(answeringWithout.sort()).toEqual([
      'GET /api/v1/docs',
      'GET /api/v1/openapi.json',
      'GET /api/v1/test/scripts/ui',
    ]);
    // Login checks its Basic credentials itself: without them it is 401 as well.
    const login = operations.find((op) => op.path === '/api/v1/login');
    expect(login && isBasicOnly(login)).toBe(true);
  });
});

describe('the two-factor login token over the served document', () => {
  let t: TestServer;
  let app: FastifyInstance;
  let operations: ServedOperation[];

  beforeAll(async () => {
    t = await startTestServer({ store: 'database:sqlite', api: { totp_enabled: true, max_failed_login: 0 } });
    app = t.server.apiApp as FastifyInstance;
    operations = await servedOperations(app);
  });
  afterAll(() => t?.stop());

  const loginToken = async () => {
    const res = await app.inject({
      method: 'GET',
      url: '/api/v1/login',
      headers: { authorization: basicHeader(OPERATOR.username, OPERATOR.password) },
    });
    expect(res.statusCode).toBe(200);
    return res.json<{ data: { token: string } }>().data.token;
  };

  test('is refused everywhere but the operations the document says take it', async () => {
    const takers = operations.filter(acceptsLoginToken).map(label).sort();
    expect(takers).toEqual(['POST /api/v1/me/totp-secret', 'POST /api/v1/verify-2fa']);
    const mismatches: string[] = [];
    for (const op of operations) {
      // POST /me/totp-secret would create the secret; one check of it is enough, and it comes last.
      if (op.path === '/api/v1/me/totp-secret' && op.method === 'POST') continue;
      const res = await app.inject({
        method: op.method as 'GET',
        url: concretePath(op.path, () => 'matrix-none'),
        headers: {
          authorization: `Bearer ${await loginToken()}`,
          ...(op.operation.requestBody ? { 'content-type': 'application/json' } : {}),
        },
        ...(op.operation.requestBody ? { payload: '{}' } : {}),
      });
      const expected = isPublic(op) ? 'allowed' : acceptsLoginToken(op) ? 'allowed' : 401;
      const fits =
        expected === 'allowed' ? res.statusCode !== 401 && res.statusCode < 500 : res.statusCode === 401;
      if (!fits) mismatches.push(`${label(op)}: ${res.statusCode}, expected ${expected}`);
    }
    expect(mismatches).toEqual([]);
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/me/totp-secret',
      headers: { authorization: `Bearer ${await loginToken()}` },
    });
    expect(created.statusCode).toBe(200);
  });

  test('a malformed body on /verify-2fa is 400 in the error envelope', async () => {
    const token = await loginToken();
    for (const payload of ['{', '[]', '{"username":5}', '{"username":"operator","token":123456}', '"x"']) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/verify-2fa',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        payload,
      });
      expect(res.statusCode, payload).toBe(400);
      expect(violation(answerOf(res)), payload).toBeUndefined();
    }
  });
});
