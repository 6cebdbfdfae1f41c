/**
 * Delivery and expiry of queued jobs (core/jobs/job-queue.ts) against a real SQLite database, with a clock the
 * test moves: a client's queued jobs go out oldest first with at most `perClient` start requests unanswered per
 * client and `global` overall; an expired job is never sent and the sweep ends it `expired`.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { JobRun, JobRunReply } from '@svc/protocol';
import { createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import { LocalClientEvents } from '../../src/core/clients/local-client-events.js';
import { JobsService, newJob, queuedJob } from '../../src/core/jobs/jobs-service.js';
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
const run = { command: 'true', interpreter: '', cwd: '', is_sudo: false, timeout_sec: 30 };

/** An agent boundary that answers job.run after a macrotask and records how many were in flight at once. */
function countingAgents() {
  const inFlight = new Map<string, number>();
  let total = 0;
  const peaks = { total: 0, perClient: 0 };
  const sent: { clientId: string; jid: string }[] = [];
  return {
    peaks,
    sent,
    runJob: async (clientId: string, job: JobRun): Promise<JobRunReply> => {
      sent.push({ clientId, jid: job.jid });
      total += 1;
      inFlight.set(clientId, (inFlight.get(clientId) ?? 0) + 1);
      peaks.total = Math.max(peaks.total, total);
      peaks.perClient = Math.max(peaks.perClient, inFlight.get(clientId) ?? 0);
      await new Promise((r) => setTimeout(r, 2));
      total -= 1;
      inFlight.set(clientId, (inFlight.get(clientId) ?? 0) - 1);
      return { pid: 1, started_at: new Date().toISOString() };
    },
    cancelJob: () => Promise.resolve(false),
  };
}

async function queue(repository: SqlJobRepository, clientId: string, count: number, ttlSec: number) {
  const jobs = Array.from({ length: count }, (_, i) => {
    const origin = { clientId, clientName: clientId, createdBy: 'alice', shownCommand: 'true' };
    return queuedJob(newJob(randomUUID(), origin, run, new Date(start.getTime() + i)), run, ttlSec, start);
  });
  await repository.insertMany(jobs);
  return jobs.map((job) => job.jid);
}

test('queued jobs are sent oldest first, paced per client and overall, each once', async () => {
  const repository = new SqlJobRepository(database);
  const agents = countingAgents();
  const clock = { now: () => start };
  const jobs = new JobsService(
    repository,
    { describe: () => undefined },
    agents,
    clock,
    new LocalClientEvents(),
    {
      tuning: { perClient: 3, global: 5 },
    },
  );
  const queued = new Map<string, string[]>();
  for (const client of ['p-1', 'p-2', 'p-3']) queued.set(client, await queue(repository, client, 70, 3600));

  // Attached twice meanwhile (a reconnect): the second drain reads the queue again but sends nothing twice.
  for (const client of queued.keys()) jobs.queue.deliver(client);
  jobs.queue.deliver('p-1');
  const deadline = Date.now() + 20_000;
  while (agents.sent.length < 210 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 100));

  expect(agents.sent).toHaveLength(210);
  expect(new Set(agents.sent.map((s) => s.jid)).size).toBe(210);
  expect(agents.peaks.perClient).toBeLessThanOrEqual(3);
  expect(agents.peaks.total).toBeLessThanOrEqual(5);
  expect(agents.peaks.total).toBeGreaterThan(1);
  for (const [client, jids] of queued) {
    expect(agents.sent.filter((s) => s.clientId === client).map((s) => s.jid)).toEqual(jids);
    const stored = await repository.get(client, jids[0] as string);
    expect(stored).toMatchObject({ status: 'running', pid: 1 });
  }
  jobs.queue.close();
});

test('an expired job is not sent; the sweep ends it expired with the reason', async () => {
  let now = start;
  const repository = new SqlJobRepository(database);
  const agents = countingAgents();
  const jobs = new JobsService(repository, { describe: () => undefined }, agents, { now: () => now });
  const [jid] = await queue(repository, 'e-1', 1, 60);
  now = new Date(start.getTime() + 60_000);
  jobs.queue.deliver('e-1');
  await new Promise((r) => setTimeout(r, 100));
  expect(agents.sent).toEqual([]);
  expect(await jobs.expireQueued()).toBe(1);
  expect(await repository.get('e-1', jid as string)).toMatchObject({
    status: 'expired',
    error: expect.stringMatching(/did not connect within queue_ttl/),
    finished_at: now.toISOString(),
  });
  expect(await jobs.expireQueued()).toBe(0);
  jobs.queue.close();
});
