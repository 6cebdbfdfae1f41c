import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import { newJob } from '../../src/core/jobs/jobs-service.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { SqlJobRepository } from '../../src/storage/job-repository.js';

const T0 = new Date('2030-01-01T00:00:00.000Z');
const run = { command: 'true', interpreter: '', cwd: '/tmp', is_sudo: false, timeout_sec: 30 };
const job = (clientId: string) =>
  newJob(randomUUID(), { clientId, clientName: clientId, createdBy: 'alice', shownCommand: 'true' }, run, T0);

let testDb: TestDatabase;
let database: Database;
let jobs: SqlJobRepository;

beforeAll(async () => {
  testDb = await createTestDatabase('postgres');
  database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
  jobs = new SqlJobRepository(database);
});
afterAll(async () => {
  await database?.close();
  await testDb?.drop();
});

/** Waits until some session of this database waits for a row lock. */
async function someoneWaitsForALock(): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const { rows } = await sql<{ n: string }>`
      select count(*) as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`.execute(database.db);
    if (Number(rows[0]?.n) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('no session ever waited for a lock');
}

it('a batch of job writes chosen as a deadlock victim (two nodes locking two jobs in opposite orders) is run again', async () => {
  const x = job('c-x');
  const y = job('c-y');
  await jobs.insertMany([x, y]);
  const started = { pid: 42, started_at: '2030-01-01T00:00:01.000Z' };
  const outcome = {
    status: 'successful' as const,
    exit_code: 0,
    finished_at: '2030-01-01T00:00:02.000Z',
    error: '',
    stdout: 'done\n',
    stderr: '',
    stdout_truncated: false,
    stderr_truncated: false,
  };
  let batch: Promise<boolean[]> | undefined;
  // "Another node": holds y, then asks for x while the batch holds x and waits for y.
  await database.db.transaction().execute(async (other) => {
    // Its own deadlock check comes late, so the batch's session is the one the engine aborts.
    await sql`set local deadlock_timeout = '10s'`.execute(other);
    await sql`update jobs set pid = 7 where jid = ${y.jid}`.execute(other);
    batch = jobs.recordMany([{ jid: x.jid, started }], [{ clientId: 'c-y', jid: y.jid, outcome }]);
    await someoneWaitsForALock();
    await sql`update jobs set pid = 8 where jid = ${x.jid}`.execute(other);
  });
  expect(await batch).toEqual([true]);
  expect(await jobs.get('c-y', y.jid)).toMatchObject({ status: 'successful', result: { stdout: 'done\n' } });
  expect((await jobs.get('c-x', x.jid))?.pid).toBe(42);
});
