import { afterEach, describe, expect, test } from 'vitest';
import { basicHeader } from '../../../../test-support/api-client.js';
import { openRaw, parseResponse } from '../../../../test-support/raw-http.js';
import { ADMIN, startTestServer, type TestServer } from '../../../../test-support/server.js';

const admin = { auth: { basic: [ADMIN.username, ADMIN.password] as [string, string] } };
const NOT_JSON = '{"username": "eve", ';

describe('authentication comes before the body', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.stop();
    t = undefined;
  });

  test('without credentials, invalid JSON and an oversized body are 401, not 400 or 413', async () => {
    t = await startTestServer({ store: 'file', api: { max_request_bytes: 1024 } });
    const invalid = await t.api.request('POST', '/users', { rawBody: NOT_JSON });
    expect(invalid.status).toBe(401);
    expect(invalid.json.errors[0].code).toBe('ERR_AUTH_REQUIRED');

    const oversized = await t.api.request('POST', '/users', {
      rawBody: JSON.stringify({ x: 'a'.repeat(4096) }),
    });
    expect(oversized.status).toBe(401);

    const wrongType = await t.api.request('PUT', '/users/eve', { rawBody: 'x', contentType: 'text/html' });
    expect(wrongType.status).toBe(401);
  });

  test('with wrong credentials, invalid JSON is 401 ERR_BAD_CREDENTIALS', async () => {
    t = await startTestServer({ store: 'file' });
    const res = await t.api.request('POST', '/users', {
      rawBody: NOT_JSON,
      auth: { basic: [ADMIN.username, 'wrong-password'] },
    });
    expect(res.status).toBe(401);
    expect(res.json.errors[0].code).toBe('ERR_BAD_CREDENTIALS');
  });

  test('with valid credentials the body is still checked: 400 for invalid JSON, 413 when too large', async () => {
    t = await startTestServer({ store: 'file', api: { max_request_bytes: 1024 } });
    const invalid = await t.api.request('POST', '/users', { ...admin, rawBody: NOT_JSON });
    expect(invalid.status).toBe(400);
    expect(invalid.json.errors[0].code).toBe('ERR_INVALID_JSON');
    const oversized = await t.api.request('POST', '/users', {
      ...admin,
      rawBody: JSON.stringify({ x: 'a'.repeat(4096) }),
    });
    expect(oversized.status).toBe(413);
  });

  test('the 401 is sent before the body arrives', async () => {
    t = await startTestServer({ store: 'file' });
    const port = Number(new URL(t.server.apiUrl ?? '').port);
    // Headers announce a body that is never sent: an answer can only come from checking the headers alone.
    const headers = 'POST /api/v1/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n';
    const unauthenticated = await openRaw(port, `${headers}Content-Length: 500\r\n\r\n`);
    const answer = await new Promise<string>((resolve) =>
      unauthenticated.socket.once('data', (d) => resolve(String(d))),
    );
    expect(parseResponse(answer).status).toBe(401);
    unauthenticated.socket.destroy();

    // The same request with credentials is answered once its body is complete.
    const body = JSON.stringify({ username: 'frank', password: 'frank-secret-1', groups: [] });
    const authenticated = await openRaw(
      port,
      `${headers}Authorization: ${basicHeader(ADMIN.username, ADMIN.password)}\r\n` +
        `Connection: close\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );
    authenticated.socket.write(body.slice(10));
    expect(parseResponse((await authenticated.closed).received).status).toBe(201);
  });

  test('a banned address gets 423 before its body is parsed; /login stays public', async () => {
    t = await startTestServer({ store: 'file', api: { max_failed_login: 2, ban_time: '1h' } });
    const login = await t.api.get('/login', admin);
    expect(login.status).toBe(200);
    for (let i = 0; i < 2; i++) {
      const failed = await t.api.get('/login', { auth: { basic: ['nobody', 'wrong-password'] } });
      expect(failed.status).toBe(401);
    }
    const banned = await t.api.request('POST', '/users', { ...admin, rawBody: NOT_JSON });
    expect(banned.status).toBe(423);
    expect(banned.json.errors[0].code).toBe('ERR_IP_BANNED');
  });
});
