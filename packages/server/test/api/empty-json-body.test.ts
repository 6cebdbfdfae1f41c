import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { basicHeader } from '../../../../test-support/api-client.js';
import { rawRequest } from '../../../../test-support/raw-http.js';
import { ADMIN, startTestServer, type TestServer } from '../../../../test-support/server.js';

const admin = { auth: { basic: [ADMIN.username, ADMIN.password] as [string, string] } };

describe('an empty body with Content-Type: application/json is no body', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ store: 'database:sqlite' });
  });
  afterAll(() => t?.stop());

  test('DELETE /logout with the header and an empty body revokes the token', async () => {
    const token = await t.api.login(ADMIN.username, ADMIN.password);
    const res = await t.api.request('DELETE', '/logout', { auth: { bearer: token }, rawBody: '' });
    expect(res.status, res.text).toBe(204);
    expect((await t.api.get('/status', { auth: { bearer: token } })).status).toBe(401);
  });

  test('DELETE /users/{name} with the header and an empty body deletes the user', async () => {
    const created = await t.api.post(
      '/users',
      { username: 'gone', password: 'gone-secret-1', groups: [] },
      admin,
    );
    expect(created.status).toBe(201);
    const res = await t.api.request('DELETE', '/users/gone', { ...admin, rawBody: '' });
    expect(res.status, res.text).toBe(204);
    expect((await t.api.request('DELETE', '/users/gone', { ...admin, rawBody: '' })).status).toBe(404);
  });

  test('a DELETE with the header and no Content-Length at all works too', async () => {
    const port = Number(new URL(t.server.apiUrl ?? '').port);
    const token = await t.api.login(ADMIN.username, ADMIN.password);
    const res = await rawRequest(
      port,
      'DELETE /api/v1/logout HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        `Authorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
    );
    expect(res.status, res.body).toBe(204);
  });

  test('GET with the header and Content-Length: 0 is answered normally', async () => {
    const port = Number(new URL(t.server.apiUrl ?? '').port);
    const res = await rawRequest(
      port,
      'GET /api/v1/status HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 0\r\n' +
        `Authorization: ${basicHeader(ADMIN.username, ADMIN.password)}\r\nConnection: close\r\n\r\n`,
    );
    expect(res.status, res.body).toBe(200);
  });

  test('a POST that needs a body still says the body is missing', async () => {
    const res = await t.api.request('POST', '/users', { ...admin, rawBody: '' });
    expect(res.status).toBe(400);
    expect(res.json.errors[0]).toMatchObject({
      code: 'ERR_MISSING_BODY',
      title: 'Missing body with JSON data',
    });
  });

  test('whitespace is not an empty body: invalid JSON', async () => {
    const res = await t.api.request('POST', '/users', { ...admin, rawBody: '  ' });
    expect(res.status).toBe(400);
    expect(res.json.errors[0].code).toBe('ERR_INVALID_JSON');
  });
});
