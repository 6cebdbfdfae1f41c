/**
 * Two svcd nodes sharing one database (PostgreSQL, MariaDB): each with its own connection pool and Scheduler, both
 * ticking in the same minute. Every due schedule fires exactly once between them.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import type { StoredFiring, StoredSchedule } from '../../src/core/schedules/ports.js';
import type { ScheduleRuns } from '../../src/core/schedules/schedule-runs.js';
import { Scheduler } from '../../src/core/schedules/scheduler.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { SqlScheduleRepository } from '../../src/storage/schedule-repository.js';

const MINUTE = 60_000;
const DUE = new Date('2031-01-01T08:00:00.000Z');
const SCHEDULES = 300;
const quiet = { warn: () => undefined, info: () => undefined };

/** The run port as a recorder: which node started which schedule's run. */
function recordingRuns(node: string, starts: string[]): ScheduleRuns {
  return {
    start: (schedule) => {
      starts.push(`${schedule.id}@${node}`);
      return Promise.resolve({ jid: randomUUID() });
    },
    state: () => Promise.resolve(undefined),
  };
}

const schedule = (i: number): StoredSchedule => ({
  id: `n-${String(i).padStart(4, '0')}`,
  name: `node test ${i}`,
  definition: {
    schedule: '0 8 * * *',
    timezone: 'UTC',
    type: 'command',
    command: 'id',
    client_ids: ['a'],
    execute_concurrently: false,
    abort_on_error: true,
    overlaps: true,
  },
  created_by: 'alice',
  created_at: new Date(DUE.getTime() - MINUTE),
  updated_by: 'alice',
  updated_at: new Date(DUE.getTime() - MINUTE),
  next_run_at: DUE,
});

describe.each(['postgres', 'mysql'] as const)('schedules on two nodes sharing %s', (engine) => {
  let testDb: TestDatabase;
  const nodes: Database[] = [];

  beforeAll(async () => {
    testDb = await createTestDatabase(engine);
    nodes.push(await openDatabase(testDb.settings, { dataDir: testDb.dataDir }));
    nodes.push(await openDatabase(testDb.settings, { dataDir: testDb.dataDir }));
    const repo = new SqlScheduleRepository(nodes[0]!);
    for (let i = 0; i < SCHEDULES; i++) await repo.insert(schedule(i));
  });
  afterAll(async () => {
    for (const db of nodes) await db.close();
    await testDb?.drop();
  });

  it('fires each due schedule exactly once between the nodes', async () => {
    const starts: string[] = [];
    const firings: StoredFiring[] = [];
    const now = { now: () => new Date(DUE.getTime() + 200) };
    const schedulers = nodes.map(
      (db, n) =>
        new Scheduler({
          repository: new SqlScheduleRepository(db),
          runs: recordingRuns(`node${n}`, starts),
          clock: now,
          log: quiet,
          missedRunWindowMs: 3_600_000,
          concurrency: 8,
          onFiring: (f) => firings.push(f),
        }),
    );
    const owned = await Promise.all(schedulers.flatMap((s) => [s.tick(), s.tick()]));
    expect(owned.reduce((a, b) => a + b, 0)).toBe(SCHEDULES);
    const fired = starts.map((s) => s.split('@')[0]);
    expect(new Set(fired).size).toBe(SCHEDULES);
    expect(fired).toHaveLength(SCHEDULES);
    expect(firings.every((f) => f.outcome === 'started' && f.scheduled_at.getTime() === DUE.getTime())).toBe(
      true,
    );
    const repo = new SqlScheduleRepository(nodes[1]!);
    expect((await repo.get('n-0000'))?.next_run_at).toEqual(new Date(DUE.getTime() + 24 * 60 * MINUTE));
    expect(await repo.firingCounts('n-0123')).toEqual({ started: 1, skipped: 0, missed: 0, failed: 0 });
    // Ticking again in the same minute fires nothing.
    expect(await Promise.all(schedulers.map((s) => s.tick()))).toEqual([0, 0]);
  });
});
