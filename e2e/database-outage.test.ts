/**
 * A PostgreSQL-backed svcd process whose database goes away while it serves (a loopback relay in front of the
 * machine's PostgreSQL is cut; PostgreSQL itself keeps running): requests that need the database get 503 with a
 * message saying the database is unavailable, the process stays up, and it serves again once the database is back.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestDatabase, POSTGRES_PORT, type TestDatabase } from '../test-support/databases.js';
import { startE2eSvcd } from '../test-support/e2e-setup.js';
import type { ApiClient } from '../test-support/api-client.js';
import { freePort, type RunningProcess } from '../test-support/process.js';
import { startTcpRelay, type TcpRelay } from '../test-support/tcp-relay.js';

const ADMIN = { basic: ['admin', 'admin-secret-1'] as [string, string] };

let dir: string;
let testDb: TestDatabase;
let relay: TcpRelay;
let svcd: RunningProcess | undefined;
let api: ApiClient;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-db-outage-'));
  testDb = await createTestDatabase('postgres');
  relay = await startTcpRelay(POSTGRES_PORT);
  const { db_name, db_user } = testDb.settings;
  const started = await startE2eSvcd(dir, {
    clientPort: await freePort(),
    apiPort: await freePort(),
    keySeed: 'e2e-db-outage-seed',
    // The [database] section follows the [api] lines of the config file.
    api: [
      '[database]',
      'db_type = "postgres"',
      `db_host = "127.0.0.1:${relay.port}"`,
      `db_name = ${JSON.stringify(db_name)}`,
      `db_user = ${JSON.stringify(db_user)}`,
    ],
  });
  svcd = started.svcd;
  api = started.api;
}, 60_000);

afterAll(async () => {
  await svcd?.stop();
  await relay?.restore();
  await testDb?.drop();
  await rm(dir, { recursive: true, force: true });
});

/** Asks until the answer has `status` (bounded): the pool notices a lost or returned server on its next use. */
async function answersWith(status: number, path: string, withinMs = 20_000) {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const res = await api.get(path, { auth: ADMIN });
    if (res.status === status) return res;
    if (Date.now() > deadline) throw new Error(`${path} answered ${res.status}, not ${status}: ${res.text}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('503 with a clear message while the database is unreachable, and recovery when it returns', async () => {
  const before = await api.get('/commands', { auth: ADMIN });
  expect(before.status, before.text).toBe(200);

  await relay.cut();
  const down = await answersWith(503, '/commands');
  expect(down.json.errors[0]).toMatchObject({
    code: expect.any(String),
    title: 'The database is unavailable',
  });
  expect(down.json.errors[0].detail).not.toBe('');
  expect(down.text).not.toMatch(/\s+at\s+\S+\s+\(|node_modules/);
  // Another route that needs the database answers the same way; the process is still up.
  expect((await api.get('/library/scripts', { auth: ADMIN })).status).toBe(503);
  expect(svcd?.child.exitCode).toBeNull();

  await relay.restore();
  const back = await answersWith(200, '/commands');
  expect(back.json).toMatchObject({ data: [], meta: { count: 0 } });
  expect((await api.get('/library/scripts', { auth: ADMIN })).status).toBe(200);
}, 90_000);
