import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { basicHeader } from '../../../../test-support/api-client.js';
import { openRaw, parseResponse, rawRequest, type RawResponse } from '../../../../test-support/raw-http.js';
import { ADMIN, startTestServer, type TestServer } from '../../../../test-support/server.js';

/** Every error svcd sends: JSON with one or more {code, title, detail}, and the content type saying so. */
function expectErrorShape(res: RawResponse, status: number, code: string): void {
  expect(res.status, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(Object.keys(res.json)).toEqual(['errors']);
  expect(res.json.errors[0]).toEqual({ code, title: expect.any(String), detail: expect.any(String) });
  expect(res.json.errors[0].title).not.toBe('');
}

describe('one error shape for everything the API answers', () => {
  let t: TestServer;
  let port: number;
  beforeAll(async () => {
    t = await startTestServer({ store: 'file', api: { read_header_timeout: '1s', read_timeout: '1s' } });
    port = Number(new URL(t.server.apiUrl ?? '').port);
  });
  afterAll(() => t?.stop());

  test('a request line that is not HTTP is 400 ERR_MALFORMED_HTTP', async () => {
    const res = await rawRequest(port, 'HELLO THERE\r\n\r\n');
    expectErrorShape(res, 400, 'ERR_MALFORMED_HTTP');
    expect(res.json.errors[0].title).toBe('Malformed HTTP request');
  });

  test('a header line without a colon is 400 ERR_MALFORMED_HTTP', async () => {
    const res = await rawRequest(port, 'GET /api/v1/status HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n');
    expectErrorShape(res, 400, 'ERR_MALFORMED_HTTP');
  });

  test('headers over 16 KiB are 431 ERR_HEADERS_TOO_LARGE, naming the limit', async () => {
    const res = await rawRequest(
      port,
      `GET /api/v1/status HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expectErrorShape(res, 431, 'ERR_HEADERS_TOO_LARGE');
    expect(res.json.errors[0].detail).toMatch(/at most \d+ bytes/);
  });

  test('a request whose headers do not arrive in time is 408 ERR_REQUEST_TIMEOUT, naming the keys', async () => {
    const res = await rawRequest(port, 'GET /api/v1/status HTTP/1.1\r\nHost: x\r\n');
    expectErrorShape(res, 408, 'ERR_REQUEST_TIMEOUT');
    expect(res.json.errors[0].detail).toMatch(/within 1s .*\[api\] read_header_timeout, read_timeout/);
  });

  test('an HTTP/1.1 request without Host is 400 in our shape', async () => {
    const res = await rawRequest(port, 'GET /api/v1/status HTTP/1.1\r\nConnection: close\r\n\r\n');
    expectErrorShape(res, 400, 'ERR_MALFORMED_HTTP');
    expect(res.json.errors[0].title).toBe('Missing Host header');
  });

  test('assorted broken requests all get a 4xx in our shape, never a 5xx', async () => {
    const broken: [string, number][] = [
      ['GET / HTTP/9.9\r\nHost: x\r\n\r\n', 400],
      ['G\u0000T /api/v1/status HTTP/1.1\r\nHost: x\r\n\r\n', 400],
      ['GET /api/v1/sta\u007ftus HTTP/1.1\r\nHost: x\r\n\r\n', 400],
      ['GET /api/v1/status HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0000b\r\n\r\n', 400],
      ['POST /api/v1/users HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 400],
      ['POST /api/v1/users HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n', 400],
      [
        'POST /api/v1/users HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n',
        400,
      ],
      [`GET /api/v1/${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431],
    ];
    for (const [request, status] of broken) {
      const res = await rawRequest(port, request);
      expect(res.status, JSON.stringify(request.slice(0, 60))).toBe(status);
      expect(res.json.errors[0].code).toMatch(/^ERR_/);
    }
  });

  test('an unknown path is 404 ERR_ROUTE_NOT_FOUND', async () => {
    const res = await rawRequest(
      port,
      'GET /api/v1/nothing-here HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    );
    expectErrorShape(res, 404, 'ERR_ROUTE_NOT_FOUND');
  });

  test('CONNECT is 405 in our shape on the API (not a reset), and the upgrade-required answer on the agent port', async () => {
    for (const target of ['127.0.0.1:22', 'example.com:443', '/api/v1/status']) {
      const res = await rawRequest(port, `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
      expectErrorShape(res, 405, 'ERR_METHOD_NOT_ALLOWED');
      expect(res.json.errors[0].title).toBe('Method CONNECT is not allowed: svcd is not a proxy');
      expect(res.headers.allow).toBe('GET, POST, PUT, DELETE');
    }
    const agentPort = await rawRequest(t.server.clientPort, 'CONNECT a:1 HTTP/1.1\r\nHost: a:1\r\n\r\n');
    expect(agentPort.status).toBe(426);
    expect(agentPort.json.errors[0].code).toMatch(/^ERR_/);
    // The API still answers afterwards.
    expect(
      (await rawRequest(port, 'GET /api/v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).status,
    ).toBe(401);
  });

  test('a known path with another method is 405 with Allow, before authentication', async () => {
    const status = await rawRequest(
      port,
      'DELETE /api/v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    );
    expectErrorShape(status, 405, 'ERR_METHOD_NOT_ALLOWED');
    expect(status.headers.allow).toBe('GET, HEAD');
    expect(status.json.errors[0].title).toBe('Method DELETE is not allowed on /api/v1/status');

    // A path with a parameter: the methods of /users/:username.
    const user = await t.api.request('POST', '/users/someone');
    expect(user.status).toBe(405);
    expect(user.headers.get('allow')).toBe('DELETE, PUT');
    expect(user.json.errors[0].code).toBe('ERR_METHOD_NOT_ALLOWED');
  });

  test('the methods a path allows still work, and an unknown method on it is 405', async () => {
    const ok = await t.api.get('/status', { auth: { basic: [ADMIN.username, ADMIN.password] } });
    expect(ok.status).toBe(200);
    const patch = await t.api.request('PATCH', '/login');
    expect(patch.status).toBe(405);
    expect(patch.headers.get('allow')).toBe('GET, HEAD');
  });

  test('a malformed percent-encoding in a path parameter is 400 in our shape', async () => {
    const res = await rawRequest(
      port,
      'GET /api/v1/clients/%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    );
    expectErrorShape(res, 400, 'ERR_INVALID_REQUEST');
  });
});

describe('a request that arrives while svcd shuts down', () => {
  test('is 503 ERR_SHUTTING_DOWN in our shape, while the request in flight completes', async () => {
    const t = await startTestServer({ store: 'file' });
    const port = Number(new URL(t.server.apiUrl ?? '').port);
    const body = JSON.stringify({ username: 'late', password: 'late-secret-1', groups: [] });
    const inFlight = await openRaw(
      port,
      'POST /api/v1/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        `Authorization: ${basicHeader(ADMIN.username, ADMIN.password)}\r\nContent-Length: ${body.length}\r\n` +
        // Node answers "100 Continue" once the request is dispatched: then shutdown may begin.
        'Expect: 100-continue\r\n\r\n',
    );
    await new Promise((resolve) => inFlight.socket.once('data', resolve));
    const stopped = t.stop();
    // The rest of the body, then a second request on the same connection, which arrives during shutdown.
    inFlight.socket.write(`${body}GET /api/v1/status HTTP/1.1\r\nHost: x\r\n\r\n`);
    const { received } = await inFlight.closed;
    await stopped;
    const [, first, second] = received.split(/(?=HTTP\/1\.1 )/).map(parseResponse);
    expect(first?.status, received).toBe(201);
    if (!second) throw new Error(`no second response in ${received}`);
    expectErrorShape(second, 503, 'ERR_SHUTTING_DOWN');
    expect(second.headers.connection).toBe('close');
  });
});
