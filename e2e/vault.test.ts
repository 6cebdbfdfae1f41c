import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hash } from '@node-rs/bcrypt';
import { afterEach, describe, expect, test } from 'vitest';
import { createApiClient, type ApiClient, type Auth } from '../test-support/api-client.js';
import { createTestDatabase, type TestDatabase } from '../test-support/databases.js';
import { SVCD_BIN, freePort, startProcess, type RunningProcess } from '../test-support/process.js';
import type { DbEngine } from '../packages/server/src/storage/database.js';

const ADMIN = { username: 'admin', password: 'admin-secret-1' };
const asAdmin: Auth = { basic: [ADMIN.username, ADMIN.password] };
const VAULT_PASSWORD = 'e2e-Vault-Pw-91c3';
const BURST = 300;
const CONCURRENCY = 8;
/** svcd is killed once this many writes have been acknowledged. */
const KILL_AFTER = 60;

let dir: string;
let db: TestDatabase | undefined;
let proc: RunningProcess | undefined;

afterEach(async () => {
  await proc?.stop();
  proc = undefined;
  await db?.drop();
  db = undefined;
  await rm(dir, { recursive: true, force: true });
});

async function setup(engine: DbEngine, apiPort: number): Promise<string> {
  dir = await mkdtemp(join(tmpdir(), 'svcd-e2e-vault-'));
  db = await createTestDatabase(engine);
  const users = [
    {
      username: ADMIN.username,
      password: await hash(ADMIN.password, { cost: 4 }),
      groups: ['Administrators'],
    },
  ];
  await writeFile(join(dir, 'users.json'), JSON.stringify(users));
  const s = db.settings;
  const config = [
    '[server]',
    'address = "127.0.0.1:0"',
    'data_dir = "data"',
    '[api]',
    `address = "127.0.0.1:${apiPort}"`,
    'auth_file = "users.json"',
    '[database]',
    `db_type = "${s.db_type}"`,
    `db_name = "${s.db_name}"`,
    `db_host = "${s.db_host}"`,
    `db_user = "${s.db_user}"`,
    '[logging]',
    'log_level = "debug"',
  ].join('\n');
  const path = join(dir, 'svcd.conf');
  await writeFile(path, config);
  return path;
}

async function startSvcd(configPath: string): Promise<RunningProcess> {
  const started = startProcess(SVCD_BIN, ['-c', configPath], { cwd: dir });
  await started.waitForLog('API listening');
  return started;
}

const valueOf = (i: number) => `acked-value-${i}-c0ffee`;

/**
 * POSTs BURST entries with CONCURRENCY requests in flight and SIGKILLs svcd once KILL_AFTER are acknowledged.
 * Returns the acknowledged entries (id → value); requests cut by the kill fail and are not counted.
 */
async function burstUntilKilled(api: ApiClient, svcd: RunningProcess): Promise<Map<number, string>> {
  const acknowledged = new Map<number, string>();
  let next = 0;
  let failures = 0;
  const worker = async () => {
    while (next < BURST) {
      const i = next++;
      try {
        const res = await api.post(
          '/vault',
          { key: `burst-${i}`, value: valueOf(i), type: 'secret' },
          { auth: asAdmin },
        );
        if (res.status !== 201) throw new Error(`POST /vault: ${res.status} ${res.text}`);
        acknowledged.set(res.json.data.id as number, valueOf(i));
        if (acknowledged.size === KILL_AFTER) svcd.child.kill('SIGKILL');
      } catch (err) {
        if (svcd.child.signalCode === null && svcd.child.exitCode === null && acknowledged.size < KILL_AFTER)
          throw err;
        failures += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  await svcd.exited;
  expect(failures).toBeGreaterThan(0); // the kill did cut the burst short
  return acknowledged;
}

describe.each(['sqlite', 'postgres'] as DbEngine[])('vault in a real svcd on %s', (engine) => {
  test('every write acknowledged before a kill -9 is readable after a restart and unlock; nothing in clear on disk or in logs', async () => {
    const apiPort = await freePort();
    const configPath = await setup(engine, apiPort);
    const api = createApiClient(`http://127.0.0.1:${apiPort}/api/v1`);
    proc = await startSvcd(configPath);

    // The real svcd uses the production scrypt parameters (their speed: bench/vault.bench.ts).
    expect(
      (await api.post('/vault-admin/init', { password: VAULT_PASSWORD }, { auth: asAdmin })).status,
    ).toBe(201);

    const acknowledged = await burstUntilKilled(api, proc);
    expect(acknowledged.size).toBeGreaterThanOrEqual(KILL_AFTER);
    const firstLogs = proc.stdoutLines.join('\n');

    proc = await startSvcd(configPath);
    expect((await api.get('/vault-admin', { auth: asAdmin })).json.data).toEqual({
      init: 'setup-completed',
      status: 'locked',
    });
    expect(
      (await api.post('/vault-admin/sesame', { password: VAULT_PASSWORD }, { auth: asAdmin })).status,
    ).toBe(201);

    for (const [id, value] of acknowledged) {
      const res = await api.get(`/vault/${id}`, { auth: asAdmin });
      expect([id, res.status, res.json?.data?.value]).toEqual([id, 200, value]);
    }
    const list = await api.get('/vault?page[limit]=1', { auth: asAdmin });
    expect(list.json.meta.count).toBeGreaterThanOrEqual(acknowledged.size);

    // At rest: nothing svcd wrote holds a value or the password in clear (PostgreSQL's rows are checked by the
    // in-process test; here the data dir, where SQLite keeps the vault file and its WAL).
    const files = await readdir(join(dir, 'data'));
    if (engine === 'sqlite') expect(files).toContain('vault.db');
    const stored = Buffer.concat(await Promise.all(files.map((f) => readFile(join(dir, 'data', f)))));
    const logs = `${firstLogs}\n${proc.stdoutLines.join('\n')}`;
    expect(logs).toContain('"url":"/api/v1/vault"');
    for (const secret of [VAULT_PASSWORD, valueOf(0), ...acknowledged.values()]) {
      expect(stored.includes(secret)).toBe(false);
      expect(logs.includes(secret)).toBe(false);
    }
  });
});
