import { Ajv2020 } from 'ajv/dist/2020.js';
import Fastify from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { connectClient, type TestAgent } from '../../../../test-support/agent-client.js';
import { ADMIN, startTestServer, type TestServer } from '../../../../test-support/server.js';
import type { ApiResponse } from '../../../../test-support/api-client.js';
import { documented } from '../../src/http/openapi/operation.js';
import { OperationRegistry } from '../../src/http/openapi/registry.js';

const asAdmin = { auth: { basic: [ADMIN.username, ADMIN.password] as [string, string] } };

type Operation = { responses: Record<string, unknown>; security?: unknown[] };
type OpenApi = { openapi: string; paths: Record<string, Record<string, Operation>> };

/** JSON pointer escaping of one path segment. */
const pointer = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

describe('the OpenAPI document', () => {
  let t: TestServer;
  let doc: OpenApi;
  let agent: TestAgent;
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });

  beforeAll(async () => {
    t = await startTestServer({
      store: 'database:sqlite',
      clientAuth: { source: 'file', entries: { 'agents-a': 'secret-a-123' } },
    });
    agent = await connectClient(
      {
        url: `ws://127.0.0.1:${t.server.clientPort}`,
        authId: 'agents-a',
        password: 'secret-a-123',
        fingerprint: t.server.fingerprint,
      },
      { client_id: 'web-1', name: 'Web One', tags: ['web'], labels: { city: 'Cologne' } },
    );
    const res = await t.api.get('/openapi.json');
    expect(res.status).toBe(200);
    doc = res.json as OpenApi;
    ajv.addSchema(doc, 'openapi');
  });
  afterAll(async () => {
    await agent?.close();
    await t?.stop();
  });

  /** Validates a real answer against the schema the document gives for its path, method and status. */
  function expectValid(path: string, method: string, res: ApiResponse) {
    const operation = doc.paths[path]?.[method];
    expect(operation, `${method} ${path} in the document`).toBeDefined();
    const status = String(res.status);
    const key = operation?.responses[status] ? status : 'default';
    const ref = `openapi#/paths/${pointer(path)}/${method}/responses/${key}/content/application~1json/schema`;
    const validate = ajv.getSchema(ref);
    if (!validate) throw new Error(`no schema at ${ref}`);
    const valid = validate(res.json);
    expect(validate.errors ?? [], `${method} ${path} ${status}: ${JSON.stringify(res.json)}`).toEqual([]);
    expect(valid).toBe(true);
  }

  test('is OpenAPI 3.1, public, with Basic and Bearer security', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc).toMatchObject({
      components: {
        securitySchemes: {
          basicAuth: { type: 'http', scheme: 'basic' },
          bearerAuth: { type: 'http', scheme: 'bearer' },
        },
      },
      security: [{ basicAuth: [] }, { bearerAuth: [] }],
    });
    expect(doc.paths['/api/v1/openapi.json']?.get?.security).toEqual([]);
    expect(doc.paths['/api/v1/status']?.get?.security).toBeUndefined();
    expect(doc.paths['/api/v1/login']?.get?.security).toEqual([{ basicAuth: [] }]);
  });

  test('names every route svcd answers, with exactly the methods svcd registered', async () => {
    // A registered path asked with a method it lacks answers 405 with Allow: the methods svcd's router holds.
    const documented = Object.entries(doc.paths);
    expect(documented.length).toBeGreaterThan(30);
    for (const [path, item] of documented) {
      const concrete = path.replace(/\{[^}]+\}/g, 'x').replace(/^\/api\/v1/, '');
      const url = path.startsWith('/api/v1/') ? concrete : `/..${concrete.replace(/^\/api/, '')}`;
      const res = await t.api.request('PATCH', url, asAdmin);
      expect(res.status, `PATCH ${path}`).toBe(405);
      const allowed = (res.headers.get('allow') ?? '')
        .split(/,\s*/)
        .filter((m) => m && m !== 'HEAD')
        .sort();
      expect(allowed, path).toEqual(
        Object.keys(item)
          .map((m) => m.toUpperCase())
          .sort(),
      );
    }
    // The WebSocket endpoints live outside Fastify and are not in the document.
    expect(Object.keys(doc.paths).filter((p) => p.includes('/ws/'))).toEqual([]);
  });

  test('real answers validate against the document', async () => {
    expectValid('/api/v1/status', 'get', await t.api.get('/status', asAdmin));
    const clients = await t.api.get('/clients', asAdmin);
    expect(clients.json.data).toHaveLength(1);
    expectValid('/api/v1/clients', 'get', clients);
    expectValid(
      '/api/v1/clients/{id}',
      'get',
      await t.api.get('/clients/web-1?fields[clients]=id,groups', asAdmin),
    );
    const created = await t.api.post('/users', { username: 'doc-user', password: 'doc-secret-1' }, asAdmin);
    expect(created.status).toBe(201);
    expectValid('/api/v1/users', 'post', created);
    const users = await t.api.get('/users', asAdmin);
    expect(users.json.meta.count).toBe(3);
    expectValid('/api/v1/users', 'get', users);
    expectValid('/api/v1/me', 'get', await t.api.get('/me', asAdmin));
    const token = await t.api.post('/me/tokens', { name: 'doc', scope: 'read' }, asAdmin);
    expect(token.status).toBe(201);
    expectValid('/api/v1/me/tokens', 'post', token);
    expectValid('/api/v1/login', 'get', await t.api.get('/login', asAdmin));
  });

  test('error answers validate against the error schema, and a wrong answer does not', async () => {
    const bad = await t.api.post('/users', { username: 'x', password: 'short', extra: 1 }, asAdmin);
    expect(bad.status).toBe(400);
    expectValid('/api/v1/users', 'post', bad);
    const denied = await t.api.get('/users');
    expect(denied.status).toBe(401);
    expectValid('/api/v1/users', 'get', denied);
    // The check is not vacuous: a user list item with an unknown field or a wrong type is refused.
    const validate = ajv.getSchema(
      `openapi#/paths/${pointer('/api/v1/users')}/get/responses/200/content/application~1json/schema`,
    );
    expect(validate?.({ data: [{ username: 'a', groups: 'x' }], meta: { count: 1 } })).toBe(false);
    expect(validate?.({ data: [{ username: 'a', password: 'x' }], meta: { count: 1 } })).toBe(false);
  });

  test('every request and response schema in it compiles as JSON Schema 2020-12', () => {
    let compiled = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const base = `openapi#/paths/${pointer(path)}/${method}`;
        const schemas = Object.entries(operation.responses).flatMap(([status, response]) =>
          Object.keys((response as { content?: object }).content ?? {}).map(
            (type) => `${base}/responses/${status}/content/${pointer(type)}/schema`,
          ),
        );
        if ((operation as { requestBody?: unknown }).requestBody)
          schemas.push(`${base}/requestBody/content/application~1json/schema`);
        for (const ref of schemas) {
          expect(ajv.getSchema(ref), ref).toBeTypeOf('function');
          compiled += 1;
        }
      }
    }
    expect(compiled).toBeGreaterThan(80);
  });

  test('request body schemas are those the routes validate with', () => {
    const body = (path: string, method: string) =>
      (doc.paths[path]?.[method] as { requestBody?: { content: Record<string, { schema: unknown }> } })
        .requestBody?.content['application/json']?.schema;
    expect(body('/api/v1/users', 'post')).toMatchObject({
      type: 'object',
      required: ['username', 'password'],
      additionalProperties: false,
    });
    expect(body('/api/v1/clients/{id}/commands', 'post')).toMatchObject({
      properties: { timeout_sec: { default: 60 } },
      required: ['command'],
    });
  });

  test('the docs page is served without authentication and needs no other host', async () => {
    const page = await t.api.get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.text).toContain("fetch('openapi.json')");
    expect(page.text).not.toMatch(/https?:\/\//);
  });
});

describe('with [api] docs = false', () => {
  let t: TestServer;
  afterEach(() => t?.stop());

  test('/docs is 404 while openapi.json is still served, without its operation', async () => {
    t = await startTestServer({ store: 'database:sqlite', api: { docs: false } });
    const page = await t.api.get('/docs');
    expect(page.status).toBe(404);
    expect(page.json.errors[0].code).toBeDefined();
    const res = await t.api.get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.json.paths['/api/v1/docs']).toBeUndefined();
    expect(res.json.paths['/api/v1/status']).toBeDefined();
  });
});

describe('the operation registry', () => {
  test('refuses a route that declares no operation, naming it', async () => {
    const app = Fastify();
    new OperationRegistry(app);
    app.get('/documented', documented({ tag: 't', summary: 's', responses: [] }), () => Promise.resolve({}));
    expect(() => app.get('/forgotten', () => Promise.resolve({}))).toThrow(
      'GET /forgotten declares no OpenAPI operation',
    );
    await app.close();
  });
});
