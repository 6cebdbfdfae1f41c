import { randomUUID } from 'node:crypto';
import type { JobRun } from '@svc/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_ENGINES, createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import { newJob, queuedJob } from '../../src/core/jobs/jobs-service.js';
import { RESULT_GRACE_MS } from '../../src/core/jobs/ports.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { SqlJobRepository } from '../../src/storage/job-repository.js';

const at = (iso: string) => new Date(iso);
const T0 = at('2030-01-01T00:00:00.000Z');
const run = { command: 'echo hi', interpreter: '', cwd: '/tmp', is_sudo: false, timeout_sec: 30 };

function queued(clientId: string, ttlSec: number, extra: Partial<Omit<JobRun, 'jid'>> = {}) {
  const r = { ...run, ...extra };
  const origin = { clientId, clientName: clientId, createdBy: 'alice', shownCommand: r.command || 'script' };
  return queuedJob(newJob(randomUUID(), origin, r, T0), r, ttlSec, T0);
}

describe.each(ALL_ENGINES)('storage contract on %s: queued jobs (016)', (engine) => {
  let testDb: TestDatabase;
  let database: Database;
  let jobs: SqlJobRepository;

  beforeAll(async () => {
    testDb = await createTestDatabase(engine);
    database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
    jobs = new SqlJobRepository(database);
  });
  afterAll(async () => {
    await database?.close();
    await testDb?.drop();
  });

  it('stores a queued job with its expiry, lists it for its client until it expires, claims it once', async () => {
    const script = Buffer.from('#!/bin/sh\necho \xff\n', 'latin1').toString('base64');
    const job = queued('q-1', 60, { command: '', script, timeout_kill: true });
    await jobs.insert(job);
    const { queuedScript: _s, ...visible } = job;
    expect(await jobs.get('q-1', job.jid)).toEqual({ ...visible, timeout_kill: true });
    expect(visible).toMatchObject({ status: 'queued', queue_expires_at: '2030-01-01T00:01:00.000Z' });
    expect(await jobs.queuedFor('q-1', T0, 10)).toEqual([job.jid]);
    expect(await jobs.queuedFor('q-1', at('2030-01-01T00:01:00.000Z'), 10)).toEqual([]);
    expect(await jobs.queuedFor('q-2', T0, 10)).toEqual([]);
    expect(await jobs.clientsWithQueued(['q-2', 'q-1', 'q-none'], T0)).toEqual(new Set(['q-1']));
    expect(await jobs.clientsWithQueued(['q-1'], at('2030-01-01T00:01:00.000Z'))).toEqual(new Set());
    expect(await jobs.clientsWithQueued([], T0)).toEqual(new Set());

    expect(await jobs.claimQueued('q-2', job.jid, T0)).toBeUndefined();
    const now = at('2030-01-01T00:00:10.000Z');
    const claimed = await jobs.claimQueued('q-1', job.jid, now);
    // The script comes back byte for byte (not through the stored text), with timeout_kill.
    expect(claimed).toEqual({
      jid: job.jid,
      command: '',
      script,
      interpreter: '',
      cwd: '/tmp',
      is_sudo: false,
      timeout_sec: 30,
      timeout_kill: true,
    });
    expect(await jobs.claimQueued('q-1', job.jid, now)).toBeUndefined();
    expect((await jobs.get('q-1', job.jid))?.status).toBe('running');
    // Its result deadline counts from the delivery.
    expect(await jobs.overdue(new Date(now.getTime() + 30_000 + RESULT_GRACE_MS - 1), 10)).toEqual([]);
    expect(await jobs.overdue(new Date(now.getTime() + 30_000 + RESULT_GRACE_MS), 10)).toEqual([
      { jid: job.jid, clientId: 'q-1' },
    ]);
  });

  it('does not claim an expired job; the sweep lists it and ends it expired, once', async () => {
    const job = queued('q-3', 5);
    await jobs.insert(job);
    const after = at('2030-01-01T00:00:05.000Z');
    expect(await jobs.claimQueued('q-3', job.jid, after)).toBeUndefined();
    const due = await jobs.expiredQueued(after, 1000);
    expect(due).toContainEqual({ jid: job.jid, clientId: 'q-3' });
    expect(await jobs.expiredQueued(at('2030-01-01T00:00:04.999Z'), 1000)).not.toContainEqual({
      jid: job.jid,
      clientId: 'q-3',
    });
    const end = {
      jid: job.jid,
      status: 'expired' as const,
      error: 'expired: no',
      finished_at: after.toISOString(),
    };
    expect(await jobs.endQueued([end])).toEqual([true]);
    expect(await jobs.endQueued([{ ...end, status: 'cancelled' }])).toEqual([false]);
    expect(await jobs.get('q-3', job.jid)).toMatchObject({
      status: 'expired',
      error: 'expired: no',
      finished_at: after.toISOString(),
    });
  });

  it("lists a run's children by status and counts the new statuses", async () => {
    const runId = randomUUID();
    const a = { ...queued('r-1', 60), multi_job_id: runId };
    const b = { ...queued('r-2', 60), multi_job_id: runId };
    await jobs.insertMany([a, b]);
    expect(await jobs.childrenIn(runId, 'queued', 10)).toHaveLength(2);
    await jobs.endQueued([{ jid: a.jid, status: 'cancelled', error: 'x', finished_at: T0.toISOString() }]);
    expect(await jobs.childrenIn(runId, 'queued', 10)).toEqual([{ jid: b.jid, clientId: 'r-2' }]);
    expect(await jobs.countByMultiJob(runId)).toMatchObject({ queued: 1, cancelled: 1, running: 0 });
  });

  it("lists a run's running children whose start no agent confirmed", async () => {
    const runId = randomUUID();
    const origin = (clientId: string) => ({
      clientId,
      clientName: clientId,
      createdBy: 'alice',
      shownCommand: 'x',
    });
    const sent = { ...newJob(randomUUID(), origin('u-1'), run, T0), multi_job_id: runId };
    const started = { ...newJob(randomUUID(), origin('u-2'), run, T0), multi_job_id: runId };
    await jobs.insertMany([sent, started]);
    await jobs.markStartedMany([{ jid: started.jid, started: { pid: 7, started_at: T0.toISOString() } }]);
    expect(await jobs.childrenIn(runId, 'running', 10)).toHaveLength(2);
    expect(await jobs.childrenIn(runId, 'running', 10, true)).toEqual([{ jid: sent.jid, clientId: 'u-1' }]);
  });
});
