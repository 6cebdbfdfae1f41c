import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ADMIN, startTestServer, type TestServer } from '../../../../test-support/server.js';
import { readDescriptorLimit } from '@svc/platform';
import { SVCD_VERSION } from '../../src/version.js';
import { descriptorReserve } from '../../src/infra/descriptor-gauge.js';

describe('API conventions and GET /status', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({
      store: 'file',
      server: { key_seed: 'test-seed', url: 'https://svc.example.com:8443' },
    });
  });
  afterAll(() => t?.stop());

  test('status reports connect_url, the key_seed fingerprint, client counts, the version, uptime and descriptors', async () => {
    const before = Date.now();
    const res = await t.api.get('/status', { auth: { basic: [ADMIN.username, ADMIN.password] } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const limit = readDescriptorLimit()!.soft;
    expect(res.json).toEqual({
      data: {
        connect_url: ['https://svc.example.com:8443'],
        // The reference system's test vector for this seed.
        fingerprint: '84:a7:15:13:9b:c3:e1:48:99:fd:82:85:54:4e:0f:4b',
        clients_connected: 0,
        clients_disconnected: 0,
        version: SVCD_VERSION,
        started_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        uptime_sec: expect.any(Number),
        descriptors_used: expect.any(Number),
        descriptors_limit: limit,
        descriptors_agent_high_water: limit - descriptorReserve(limit),
      },
    });
    // Started by beforeAll, before this request: a past start and the whole seconds since it.
    const { started_at: startedAt, uptime_sec: uptime } = res.json.data as {
      started_at: string;
      uptime_sec: number;
    };
    expect(Date.parse(startedAt)).toBeLessThanOrEqual(before);
    expect(uptime).toBeLessThanOrEqual(Math.ceil((Date.now() - Date.parse(startedAt)) / 1000));
    expect(uptime).toBeGreaterThanOrEqual(Math.floor((before - Date.parse(startedAt)) / 1000));
    // This test process is svcd: its open descriptors include the two listeners and the request's connection.
    expect(res.json.data.descriptors_used).toBeGreaterThan(3);
    expect(res.json.data.descriptors_used).toBeLessThan(limit);
  });

  test('unknown routes are a JSON 404 even without credentials', async () => {
    const res = await t.api.get('/no-such-thing');
    expect(res.status).toBe(404);
    expect(res.json.errors[0]).toEqual({
      code: 'ERR_ROUTE_NOT_FOUND',
      title: 'No such route: GET /api/v1/no-such-thing',
      detail: "check the method and path; GET /api/v1/openapi.json lists the API's routes",
    });
    const root = await t.api.get('');
    expect(root.json.errors[0].detail).toBe(
      "check the method and path; GET /api/v1/openapi.json lists the API's routes",
    );
    for (const outside of ['/no-such-thing', '/api/v2/status', '/api/status']) {
      const miss = await fetch(`${t.server.apiUrl?.replace(/\/api\/v1$/, '')}${outside}`);
      expect(miss.status, outside).toBe(404);
      expect(((await miss.json()) as { errors: unknown[] }).errors[0], outside).toEqual({
        code: 'ERR_ROUTE_NOT_FOUND',
        title: `No such route: GET ${outside}`,
        detail: 'the API lives under /api/v1',
      });
    }
  });
});

describe('connect_url without [server] url', () => {
  test('is derived from the client listener address and its real port', async () => {
    const t = await startTestServer({ store: 'file' });
    try {
      const res = await t.api.get('/status', { auth: { basic: [ADMIN.username, ADMIN.password] } });
      expect(res.json.data.connect_url).toEqual([`http://127.0.0.1:${t.server.clientPort}`]);
      expect(res.json.data.fingerprint).toMatch(/^([0-9a-f]{2}:){15}[0-9a-f]{2}$/);
    } finally {
      await t.stop();
    }
  });
});
