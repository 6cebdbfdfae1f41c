/**
 * The Scheduler's own timing (start): driven by a clock and timers the test advances, over a real SQLite schedule
 * store. A timer that fires a little early by the wall clock (Node's can, by a ms or so) must not push the minute's
 * firing to the next minute.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import type { StoredFiring, StoredSchedule } from '../../src/core/schedules/ports.js';
import { Scheduler, type SchedulerTimers } from '../../src/core/schedules/scheduler.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { SqlScheduleRepository } from '../../src/storage/schedule-repository.js';

const MINUTE = 60_000;
const FIRST = Date.parse('2031-01-01T08:00:00.000Z');
const quiet = { warn: () => undefined, info: () => undefined };

const everyMinute: StoredSchedule = {
  id: 'every-minute',
  name: 'every minute',
  definition: {
    schedule: '* * * * *',
    timezone: 'UTC',
    type: 'command',
    command: 'id',
    client_ids: ['a'],
    execute_concurrently: false,
    abort_on_error: true,
    overlaps: true,
  },
  created_by: 'alice',
  created_at: new Date(FIRST - MINUTE),
  updated_by: 'alice',
  updated_at: new Date(FIRST - MINUTE),
  next_run_at: new Date(FIRST),
};

/** A wall clock and timers the test moves on; a timer longer than a second fires `earlyMs` before its time. */
function manualTime(start: number, earlyMs: number) {
  let t = start;
  let pending: { at: number; fn: () => void }[] = [];
  const timers: SchedulerTimers = {
    setTimeout(fn, ms) {
      const entry = { at: t + ms - (ms > 1000 ? earlyMs : 0), fn };
      pending.push(entry);
      return entry;
    },
    clearTimeout(handle) {
      pending = pending.filter((p) => p !== handle);
    },
  };
  return {
    clock: { now: () => new Date(t) },
    timers,
    /** Passes time on by `ms` (a query that takes that long). */
    pass: (ms: number) => (t += ms),
    /** Fires the timers due up to `until`, each once the tick it started has armed the next. */
    async runUntil(until: number) {
      for (;;) {
        pending.sort((a, b) => a.at - b.at);
        const next = pending[0];
        if (!next || next.at > until) return;
        pending = pending.slice(1);
        t = Math.max(t, next.at);
        next.fn();
        for (let i = 0; i < 1000 && pending.length === 0; i++) await new Promise((r) => setImmediate(r));
      }
    },
  };
}

describe('the scheduler timer', () => {
  let testDb: TestDatabase;
  let database: Database;

  beforeEach(async () => {
    testDb = await createTestDatabase('sqlite');
    database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
  });
  afterEach(async () => {
    await database?.close();
    await testDb?.drop();
  });

  it('fires each minute at its minute when the timer fires a few ms early and a tick takes a few ms', async () => {
    const time = manualTime(FIRST - 30_000, 2);
    const store = new SqlScheduleRepository(database);
    await store.insert(everyMinute);
    // Reading the due schedules takes 5 ms of the wall clock, more than the timer was early.
    const repository = Object.create(store) as SqlScheduleRepository;
    repository.due = (now, limit) => {
      time.pass(5);
      return store.due(now, limit);
    };
    const firings: StoredFiring[] = [];
    const scheduler = new Scheduler({
      repository,
      runs: { start: () => Promise.resolve({ jid: randomUUID() }), state: () => Promise.resolve(undefined) },
      clock: time.clock,
      log: quiet,
      missedRunWindowMs: 3_600_000,
      onFiring: (f) => firings.push(f),
    });
    scheduler.start(0, time.timers);
    await time.runUntil(FIRST + 2 * MINUTE + 1_000);
    await scheduler.stop(time.timers);

    // Each minute once, each within a second of its minute (not the next tick's, a minute late).
    expect(firings.map((f) => f.scheduled_at.getTime() - FIRST)).toEqual([0, MINUTE, 2 * MINUTE]);
    for (const f of firings) expect(f.fired_at.getTime() - f.scheduled_at.getTime()).toBeLessThan(1_000);
  });
});
