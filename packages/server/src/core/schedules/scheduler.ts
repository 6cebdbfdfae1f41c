import type { Clock } from '../auth/ports.js';
import { parseCron } from './cron.js';
import { nextFiring } from './next-firing.js';
import type { ScheduleRepository, StoredFiring, StoredSchedule } from './ports.js';
import type { ScheduleRuns } from './schedule-runs.js';

const MINUTE = 60_000;
/** Due schedules read per query; a tick reads again until none is left. */
const BATCH = 1000;
/** A tick that starts or lasts longer than this is logged: later firings wait for it. */
const SLOW_MS = 5_000;

export interface SchedulerDeps {
  repository: ScheduleRepository;
  runs: ScheduleRuns;
  clock: Clock;
  log: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
  /**
   * A firing found later than this after its minute (svcd was not running then) is recorded as missed instead of
   * run; within it, it runs once, however many minutes were missed.
   */
  missedRunWindowMs: number;
  /** Firings handled at once (claim, targets, run start). */
  concurrency?: number;
  /** Told of each firing once it is recorded (tests and the benchmark await it). */
  onFiring?: (firing: StoredFiring) => void;
}

/** The timers the scheduler waits with; tests drive `tick()` themselves instead. */
export interface SchedulerTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const describeDelay = (ms: number): string =>
  ms >= 3_600_000 ? `${(ms / 3_600_000).toFixed(1)} h` : `${Math.round(ms / 1000)} s`;

/**
 * Fires the schedules that are due, each minute once: reads the due ones, and for each moves next_run_at on with a
 * conditional UPDATE (from the value it read to the next firing after now). Only the caller whose UPDATE changed the
 * row fires it, so a schedule fires once even when several svcd nodes share the database or a tick overlaps
 * another. A firing starts a normal multi-client run linked to the schedule; one that is skipped (the previous run
 * still going and overlaps false), missed (svcd was down longer than the window) or failed (no targets, say) is
 * recorded with why.
 */
export class Scheduler {
  private timer: unknown;
  private ticking: Promise<number> | undefined;
  private stopped = false;

  constructor(private readonly deps: SchedulerDeps) {}

  /**
   * Ticks after `firstDelayMs` (the firings missed while svcd was down; the delay lets agents reconnect first) and
   * then at each minute.
   */
  start(firstDelayMs = 0, timers: SchedulerTimers = globalThis): void {
    const now = () => this.deps.clock.now().getTime();
    const armAt = (due: number) => {
      if (this.stopped) return;
      this.timer = timers.setTimeout(
        () => {
          const startedAt = now();
          // A timer may fire a few ms early by the wall clock: a tick then would find the minute not yet due and
          // the next would come a minute later, firing this minute late and merging it with the next.
          if (startedAt < due) return armAt(due);
          if (startedAt - due > SLOW_MS)
            this.deps.log.warn({ late_ms: startedAt - due }, 'schedules: the minute tick started late');
          void this.tick().finally(() => {
            const end = now();
            if (end - startedAt > SLOW_MS)
              this.deps.log.warn({ took_ms: end - startedAt }, 'schedules: a tick took long');
            // The minute after the one this tick handled: at once when the tick ran past it.
            armAt(startedAt - (startedAt % MINUTE) + MINUTE);
          });
        },
        Math.max(0, due - now()),
      );
      (this.timer as { unref?: () => void }).unref?.();
    };
    armAt(now() + firstDelayMs);
  }

  async stop(timers: SchedulerTimers = globalThis): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) timers.clearTimeout(this.timer);
    await this.ticking?.catch(() => undefined);
  }

  /** Handles every schedule due now; resolves with how many firings this call owned. One tick at a time. */
  tick(): Promise<number> {
    const previous = this.ticking ?? Promise.resolve(0);
    const run = previous
      .catch(() => 0)
      .then(() => this.fireDue())
      .catch((err: unknown) => {
        this.deps.log.warn({ err }, 'schedules: could not read the due schedules');
        return 0;
      });
    this.ticking = run;
    return run;
  }

  private async fireDue(): Promise<number> {
    const now = this.deps.clock.now();
    let owned = 0;
    for (;;) {
      const due = await this.deps.repository.due(now, BATCH);
      if (due.length === 0) return owned;
      owned += await this.fireBatch(due, now);
      if (due.length < BATCH) return owned;
    }
  }

  /** Claims the batch in one transaction, starts the runs of the firings it won, then records them together. */
  private async fireBatch(due: readonly StoredSchedule[], now: Date): Promise<number> {
    const claims = due.flatMap((s) => {
      const next = this.nextAfter(s, now);
      return s.next_run_at && next !== undefined ? [{ id: s.id, expected: s.next_run_at, next }] : [];
    });
    const won = await this.deps.repository.claim(claims);
    const mine = due.filter((s) => won.has(s.id));
    const firings = await inParallel(mine, this.deps.concurrency ?? 32, (s) =>
      this.outcome(s, s.next_run_at ?? now, now),
    );
    try {
      await this.deps.repository.recordFirings(firings);
    } catch (err) {
      this.deps.log.warn({ err, firings: firings.length }, 'schedules: could not record firings');
    }
    for (const firing of firings) {
      this.deps.log.info(
        {
          schedule_id: firing.schedule_id,
          scheduled_at: firing.scheduled_at.toISOString(),
          outcome: firing.outcome,
          ...(firing.jid ? { jid: firing.jid } : { reason: firing.reason }),
        },
        'schedule fired',
      );
      this.deps.onFiring?.(firing);
    }
    return firings.length;
  }

  /** The firing after now; undefined (and a warning) for a stored expression svcd can no longer read. */
  private nextAfter(schedule: StoredSchedule, now: Date): Date | null | undefined {
    try {
      const { schedule: cron, timezone } = schedule.definition;
      return nextFiring(parseCron(cron), timezone, now);
    } catch (err) {
      this.deps.log.warn({ err, schedule_id: schedule.id }, 'schedules: cannot compute the next firing');
      return undefined;
    }
  }

  private async outcome(schedule: StoredSchedule, scheduledAt: Date, now: Date): Promise<StoredFiring> {
    const base = { schedule_id: schedule.id, scheduled_at: scheduledAt, fired_at: now, jid: null };
    const late = now.getTime() - scheduledAt.getTime();
    if (late > this.deps.missedRunWindowMs)
      return {
        ...base,
        outcome: 'missed',
        reason: `svcd was not running at ${scheduledAt.toISOString()}; found ${describeDelay(late)} later, past the missed_run_window of ${describeDelay(this.deps.missedRunWindowMs)}`,
      };
    try {
      if (!schedule.definition.overlaps) {
        const running = await this.stillRunning(schedule.id);
        if (running)
          return {
            ...base,
            outcome: 'skipped',
            reason: `the previous run ${running} is still running and overlaps is false`,
          };
      }
      const { jid } = await this.deps.runs.start(schedule);
      return { ...base, outcome: 'started', reason: '', jid };
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      this.deps.log.warn({ schedule_id: schedule.id, reason }, 'schedules: a firing could not start its run');
      return { ...base, outcome: 'failed', reason };
    }
  }

  private async stillRunning(scheduleId: string): Promise<string | undefined> {
    const last = await this.deps.repository.lastStarted(scheduleId);
    if (!last?.jid) return undefined;
    const state = await this.deps.runs.state(last.jid);
    return state?.status === 'running' ? last.jid : undefined;
  }
}

/** Maps with at most `limit` calls in flight, results in order. */
async function inParallel<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
