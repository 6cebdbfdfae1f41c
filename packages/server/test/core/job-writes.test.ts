/**
 * Start records and results written together (core/jobs/job-writes.ts) against a real SQLite database: a start and
 * the result of the same job share one UPDATE, a forged result next to them changes nothing, and each item gets
 * its own answer.
 */
import type { Job } from '@svc/protocol';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import { writeJobs } from '../../src/core/jobs/job-writes.js';
import { newJob } from '../../src/core/jobs/jobs-service.js';
import type { FinishedJob, JobOutcome, StartedJob } from '../../src/core/jobs/ports.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { SqlJobRepository } from '../../src/storage/job-repository.js';

let testDb: TestDatabase;
let database: Database;

beforeAll(async () => {
  testDb = await createTestDatabase('sqlite');
  database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
});
afterAll(async () => {
  await database?.close();
  await testDb?.drop();
});

const run = { command: 'id', interpreter: '', cwd: '', is_sudo: false, timeout_sec: 60 };
const job = (clientId: string): Job =>
  newJob(
    crypto.randomUUID(),
    { clientId, clientName: clientId, createdBy: 'alice', shownCommand: 'id' },
    run,
    new Date(),
  );
const outcome = (stdout: string): JobOutcome => ({
  status: 'successful',
  exit_code: 0,
  finished_at: '2030-01-01T00:00:09.000Z',
  error: '',
  stdout,
  stderr: '',
  stdout_truncated: false,
  stderr_truncated: false,
});
const started = (pid: number) => ({ pid, started_at: `2030-01-01T00:00:0${pid}.000Z` });

test('a start and its result share one UPDATE; a forged result before the real one changes nothing', async () => {
  const repository = new SqlJobRepository(database);
  const calls: { starts: readonly StartedJob[]; finishes: readonly FinishedJob[] }[] = [];
  // The real repository, recording what it was asked to write.
  const recording = Object.assign(Object.create(repository) as SqlJobRepository, {
    recordMany: (starts: readonly StartedJob[], finishes: readonly FinishedJob[]) => {
      calls.push({ starts, finishes });
      return repository.recordMany(starts, finishes);
    },
  });
  const [a, b, c] = [job('web-1'), job('web-2'), job('web-3')];
  await repository.insertMany([a, b, c]);

  const answers = await writeJobs(recording, [
    { finish: { clientId: 'web-1', jid: a.jid, outcome: outcome('a') } },
    { start: { jid: a.jid, started: started(1) } },
    { finish: { clientId: 'db-1', jid: b.jid, outcome: outcome('forged') } },
    { start: { jid: b.jid, started: started(2) } },
    { finish: { clientId: 'web-2', jid: b.jid, outcome: outcome('b') } },
    { start: { jid: c.jid, started: started(3) } },
  ]);

  expect(answers).toEqual([true, true, false, true, true, true]);
  expect(calls).toHaveLength(1);
  expect(calls[0]?.starts).toEqual([{ jid: c.jid, started: started(3) }]);
  expect(calls[0]?.finishes.map((f) => [f.clientId, f.started?.pid])).toEqual([
    ['web-1', 1],
    ['db-1', 2],
    ['web-2', undefined],
  ]);
  expect(await repository.get('web-1', a.jid)).toMatchObject({ pid: 1, result: { stdout: 'a' } });
  expect(await repository.get('web-2', b.jid)).toMatchObject({
    status: 'successful',
    pid: 2,
    started_at: '2030-01-01T00:00:02.000Z',
    result: { stdout: 'b' },
  });
  expect(await repository.get('web-3', c.jid)).toMatchObject({ status: 'running', pid: 3 });
});
