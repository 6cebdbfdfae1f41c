/**
 * The bad-input campaign: every operation of the served OpenAPI document gets hostile ids, malformed list queries,
 * spoiled bodies and wrong content types (seeded, so every run sends the same few thousand requests), through
 * inject(); bodies over 10 MB and raw malformed requests go over the real listener. Every answer must be below
 * 500, show nothing of the server's insides, and carry every 4xx in the error envelope; svcd must still answer.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { basicHeader } from '../../../../test-support/api-client.js';
import { rawRequest } from '../../../../test-support/raw-http.js';
import { ADMIN, startTestServer, type TestServer } from '../../../../test-support/server.js';
import { casesFor, seededRandom, type BadRequest } from './bad-input-cases.js';
import { answerOf, label, servedOperations, violation, type ServedOperation } from './served-api.js';

const SEED = 0x5eed_2024;
/** The campaign's size is bounded: a change that multiplies the cases should be a conscious one. */
const MAX_REQUESTS = 6000;
const TEN_MB = 10 * 1024 * 1024;

describe('the bad-input campaign over the served document', () => {
  let t: TestServer;
  let app: FastifyInstance;
  let operations: ServedOperation[];
  let auth: string;
  const statuses = new Map<number, number>();
  const violations: string[] = [];

  beforeAll(async () => {
    t = await startTestServer({
      store: 'database:sqlite',
      clientAuth: { source: 'table', entries: { 'campaign-agents': 'campaign-secret-1' } },
      server: { auth_write: true },
      api: { enable_ws_test_endpoints: true, max_failed_login: 0 },
    });
    app = t.server.apiApp as FastifyInstance;
    operations = await servedOperations(app);
    const token = await t.api.post(
      '/me/tokens',
      { name: 'campaign', scope: 'read+write' },
      { auth: { basic: [ADMIN.username, ADMIN.password] } },
    );
    expect(token.status).toBe(201);
    // An API token: it keeps working whatever the campaign does to sessions (DELETE /logout).
    auth = basicHeader(ADMIN.username, token.json.data.token as string);
  });
  afterAll(() => t?.stop());

  function record(request: BadRequest, op: string, answer: ReturnType<typeof answerOf>) {
    statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
    const wrong = violation(answer, request.echoed);
    if (wrong)
      violations.push(`${op} [${request.kind}] ${request.method} ${request.url.slice(0, 120)}: ${wrong}`);
  }

  test(
    'every generated request is answered below 500, in the envelope, without insides',
    { timeout: 120_000 },
    async () => {
      const random = seededRandom(SEED);
      const planned = operations.map((op) => ({ op, cases: casesFor(op, auth, random) }));
      const total = planned.reduce((sum, p) => sum + p.cases.length, 0);
      expect(total).toBeGreaterThan(2000);
      expect(total).toBeLessThan(MAX_REQUESTS);
      for (const { op, cases } of planned) {
        for (const request of cases) {
          const res = await app.inject({
            method: request.method as 'GET',
            url: request.url,
            headers: request.headers,
            ...(request.payload === undefined ? {} : { payload: request.payload }),
          });
          record(request, label(op), answerOf(res));
        }
      }
      expect(violations).toEqual([]);
      // Not vacuous: the requests got past authentication and were refused for what they held.
      const count = (status: number) => statuses.get(status) ?? 0;
      expect(count(401)).toBeLessThan(total / 50);
      expect(count(400)).toBeGreaterThan(total / 3);
      expect(count(404)).toBeGreaterThan(100);
    },
  );

  test('bodies over 10 MB are refused with 413 on the real listener, without credentials with 401', async () => {
    const port = Number(new URL(t.server.apiUrl ?? '').port);
    const huge = '{"username":"' + 'x'.repeat(TEN_MB + 1024) + '"}';
    const bodyRoutes = operations.filter((op) => op.operation.requestBody && !op.path.includes('{'));
    expect(bodyRoutes.length).toBeGreaterThan(5);
    for (const op of bodyRoutes.slice(0, 4)) {
      const withAuth = await fetch(`${t.server.apiUrl?.replace('/api/v1', '')}${op.path}`, {
        method: op.method,
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: huge,
      });
      const answer = {
        status: withAuth.status,
        contentType: withAuth.headers.get('content-type') ?? '',
        body: await withAuth.text(),
      };
      expect(answer.status, label(op)).toBe(413);
      expect(violation(answer), label(op)).toBeUndefined();
    }
    // Without credentials the answer comes before the body is read.
    const denied = await rawRequest(
      port,
      `POST /api/v1/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${TEN_MB * 2}\r\nConnection: close\r\n\r\n{"a":`,
    );
    expect(denied.status).toBe(401);
    expect(
      violation({
        status: denied.status,
        contentType: denied.headers['content-type'] ?? '',
        body: denied.body,
      }),
    ).toBeUndefined();
    // Chunked, so no Content-Length tells svcd in advance.
    const chunk = 'y'.repeat(1024 * 1024);
    const chunked = await fetch(`${t.server.apiUrl}/users`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"username":"'));
          for (let i = 0; i < 11; i += 1) controller.enqueue(new TextEncoder().encode(chunk));
          controller.enqueue(new TextEncoder().encode('"}'));
          controller.close();
        },
      }),
      duplex: 'half',
    }).catch((err: unknown) => err);
    // svcd may close the connection once the limit is passed; if it answers, it is 413 in the envelope.
    if (chunked instanceof Response) {
      const answer = {
        status: chunked.status,
        contentType: chunked.headers.get('content-type') ?? '',
        body: await chunked.text(),
      };
      expect(answer.status).toBe(413);
      expect(violation(answer)).toBeUndefined();
    }
  });

  test('content types and malformed requests on the real socket are 4xx in the envelope', async () => {
    const port = Number(new URL(t.server.apiUrl ?? '').port);
    const [user, password] = Buffer.from(auth.slice('Basic '.length), 'base64').toString().split(':');
    const authHeader = basicHeader(user ?? '', password ?? '');
    const requests = [
      ['text/plain', 'POST /api/v1/users', '{"username":"a","password":"b"}'],
      ['application/x-www-form-urlencoded', 'POST /api/v1/users', 'username=a&password=b'],
      ['application/json; charset=utf-16', 'POST /api/v1/users', '{}'],
      ['application/json', 'POST /api/v1/users', '{"username":'],
      ['application/json', 'GET /api/v1/clients/..%2F..%2Fetc%2Fpasswd', ''],
      ['application/json', 'GET /api/v1/clients/a%00b', ''],
      ['application/json', 'GET /api/v1/../../etc/passwd', ''],
      ['application/json', 'GET /api/v1/clients?page[limit]=%ff', ''],
      ['application/json', 'GET /api/v1/clients?sort=' + '-'.repeat(7000), ''],
    ];
    for (const [contentType, requestLine, body] of requests) {
      const res = await rawRequest(
        port,
        `${requestLine} HTTP/1.1\r\nHost: x\r\nAuthorization: ${authHeader}\r\nContent-Type: ${contentType}\r\n` +
          `Content-Length: ${Buffer.byteLength(body ?? '')}\r\nConnection: close\r\n\r\n${body}`,
      );
      const answer = { status: res.status, contentType: res.headers['content-type'] ?? '', body: res.body };
      expect(res.status, requestLine).toBeGreaterThanOrEqual(400);
      expect(violation(answer, [requestLine ?? '']), `${contentType} ${requestLine}`).toBeUndefined();
    }
    // Malformed HTTP itself: answered by the listener in the same envelope.
    for (const raw of [
      'GET /api/v1/status HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\nConnection: close\r\n\r\n',
      'GET /api/v1/status HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n',
      'GET /api/v1/status HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n',
      'GET /api/v1/status HTTP/1.1\r\nHo st: x\r\nConnection: close\r\n\r\n',
      'GET /api/v1/\u0000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      'GET /api/v1/status HTTP/9.9\r\nHost: x\r\nConnection: close\r\n\r\n',
      'BREW /api/v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      'GET //api/v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      `GET /api/v1/status HTTP/1.1\r\nHost: x\r\nX-Big: ${'h'.repeat(20_000)}\r\nConnection: close\r\n\r\n`,
    ]) {
      const res = await rawRequest(port, raw);
      const answer = { status: res.status, contentType: res.headers['content-type'] ?? '', body: res.body };
      expect(res.status, JSON.stringify(raw.slice(0, 60))).toBeGreaterThanOrEqual(400);
      expect(violation(answer), JSON.stringify(raw.slice(0, 60))).toBeUndefined();
    }
  });

  test('svcd is alive and answers as before', async () => {
    const status = await t.api.get('/status', { auth: { header: auth } });
    expect(status.status).toBe(200);
    expect(status.json.data.version).toBeTypeOf('string');
    const clients = await t.api.get('/clients', { auth: { header: auth } });
    expect(clients.status).toBe(200);
  });
});
