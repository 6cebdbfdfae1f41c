/**
 * Jobs whose result never comes (core/jobs/jobs-service.ts expireOverdue, against a real SQLite database, with a
 * clock the test moves instead of waiting): at the deadline svcd presumes them `unknown` with the reason, a sequential
 * runner waiting for one is told, and the agent's own result, replayed later, still replaces the presumption.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { JobStatus } from '@svc/protocol';
import { createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import { LocalClientEvents } from '../../src/core/clients/local-client-events.js';
import { JobWatch } from '../../src/core/jobs/job-watch.js';
import { JobsService, RESULT_OVERDUE, newJob } from '../../src/core/jobs/jobs-service.js';
import { DispatchError, RESULT_GRACE_MS } from '../../src/core/jobs/ports.js';
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

const start = new Date('2030-06-01T12:00:00.000Z');

test('an overdue job is presumed unknown at its deadline, not before; a late result from the agent replaces it', async () => {
  let now = start;
  const clock = { now: () => now };
  const repository = new SqlJobRepository(database);
  const events = new LocalClientEvents();
  const watch = new JobWatch(events);
  const told: [string, JobStatus][] = [];
  // This test never dispatches: the jobs are stored as if an agent had started them.
  const noAgents = {
    runJob: () => Promise.reject(new DispatchError('offline', 'no agents here')),
    cancelJob: () => Promise.reject(new DispatchError('offline', 'no agents here')),
  };
  const jobs = new JobsService(repository, { describe: () => undefined }, noAgents, clock, events);
  const run = { command: '/usr/bin/sleep 60', interpreter: '', cwd: '', is_sudo: false, timeout_sec: 5 };
  const origin = { clientId: 'lost-1', clientName: 'lost', createdBy: 'alice', shownCommand: run.command };
  const short = newJob(crypto.randomUUID(), origin, run, start);
  const long = newJob(crypto.randomUUID(), origin, { ...run, timeout_sec: 3600 }, start);
  await repository.insertMany([short, long]);
  watch.watch(short.jid, 'lost-1', { finished: (jid, status) => told.push([jid, status]) });

  now = new Date(start.getTime() + 5_000 + RESULT_GRACE_MS - 1);
  expect(await jobs.expireOverdue()).toBe(0);
  expect((await repository.get('lost-1', short.jid))?.status).toBe('running');

  now = new Date(start.getTime() + 5_000 + RESULT_GRACE_MS);
  expect(await jobs.expireOverdue()).toBe(1);
  expect(await repository.get('lost-1', short.jid)).toMatchObject({
    status: 'unknown',
    error: RESULT_OVERDUE,
    finished_at: now.toISOString(),
  });
  expect(told).toEqual([[short.jid, 'unknown']]);
  expect((await repository.get('lost-1', long.jid))?.status).toBe('running');
  expect(await jobs.expireOverdue()).toBe(0);

  // The agent was only cut off: it replays the result it kept, which is the truth and replaces the presumption.
  const end = {
    status: 'successful' as const,
    exit_code: 0,
    finished_at: new Date(start.getTime() + 4_000).toISOString(),
    error: '',
    stdout_truncated: false,
    stderr_truncated: false,
  };
  const replay = {
    end,
    stdout: Buffer.from('done\n'),
    stderr: Buffer.alloc(0),
    stdoutCapped: false,
    stderrCapped: false,
  };
  expect(await jobs.store('lost-1', short.jid, replay)).toBe(true);
  expect(await repository.get('lost-1', short.jid)).toMatchObject({
    status: 'successful',
    error: '',
    result: { stdout: 'done\n' },
  });
  // Stored once: the same result offered again is not stored twice.
  expect(await jobs.store('lost-1', short.jid, replay)).toBe(false);
});

test('a hello that does not list a job its agent started ends it unknown for good; listed and unconfirmed jobs stay', async () => {
  const clock = { now: () => start };
  const repository = new SqlJobRepository(database);
  const noAgents = {
    runJob: () => Promise.reject(new DispatchError('offline', 'no agents here')),
    cancelJob: () => Promise.reject(new DispatchError('offline', 'no agents here')),
  };
  const jobs = new JobsService(repository, { describe: () => undefined }, noAgents, clock);
  const run = { command: '/usr/bin/true', interpreter: '', cwd: '', is_sudo: false, timeout_sec: 60 };
  const origin = { clientId: 'back-1', clientName: 'back', createdBy: 'alice', shownCommand: run.command };
  const [lost, held, unconfirmed, presumed] = [1, 2, 3, 4].map((n) =>
    newJob(crypto.randomUUID(), origin, run, new Date(start.getTime() + n)),
  ) as [
    ReturnType<typeof newJob>,
    ReturnType<typeof newJob>,
    ReturnType<typeof newJob>,
    ReturnType<typeof newJob>,
  ];
  await repository.insertMany([lost, held, unconfirmed, presumed]);
  const started = { pid: 10, started_at: start.toISOString() };
  await repository.markStartedMany([lost, held, presumed].map((j) => ({ jid: j.jid, started })));
  await repository.finish('back-1', presumed.jid, {
    status: 'unknown',
    exit_code: null,
    finished_at: start.toISOString(),
    error: RESULT_OVERDUE,
    stdout: '',
    stderr: '',
    stdout_truncated: false,
    stderr_truncated: false,
    presumed: true,
  });

  await jobs.agentHolds('back-1', new Set([held.jid]), new Date(start.getTime() + 10));
  expect(await repository.get('back-1', lost.jid)).toMatchObject({
    status: 'unknown',
    error: expect.stringMatching(/reconnected without this job/),
  });
  expect((await repository.get('back-1', held.jid))?.status).toBe('running');
  expect((await repository.get('back-1', unconfirmed.jid))?.status).toBe('running');
  // The presumption became final: no result can come for it any more.
  expect(await repository.get('back-1', presumed.jid)).toMatchObject({
    status: 'unknown',
    error: expect.stringMatching(/reconnected without this job/),
  });
  const late = {
    end: {
      status: 'successful' as const,
      exit_code: 0,
      finished_at: start.toISOString(),
      error: '',
      stdout_truncated: false,
      stderr_truncated: false,
    },
    stdout: Buffer.alloc(0),
    stderr: Buffer.alloc(0),
    stdoutCapped: false,
    stderrCapped: false,
  };
  expect(await jobs.store('back-1', presumed.jid, late)).toBe(false);
  expect(await jobs.store('back-1', held.jid, late)).toBe(true);
});
