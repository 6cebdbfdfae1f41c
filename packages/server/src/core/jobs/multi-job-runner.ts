import { randomUUID } from 'node:crypto';
import type { Job, JobRun, JobStatus, MultiJobSummary } from '@svc/protocol';
import type { Clock } from '../auth/ports.js';
import type { JobListener, JobWatch, OutputStream } from './job-watch.js';
import { failedOutcome, newJob, queuedJob, type JobsService } from './jobs-service.js';
import type { RolloutState, TargetClient } from './multi-job-ports.js';
import { MAX_JOBS_PER_INSERT, RESULT_GRACE_MS, type JobRepository } from './ports.js';
import { Slots } from './slots.js';

/** job.run requests unanswered at once in concurrent mode; also the size of each batch of inserted child rows. */
export const CONCURRENT_WINDOW = MAX_JOBS_PER_INSERT;
/** Steps of CONCURRENT_WINDOW clients a cluster node keeps in flight at once (one request per node each). */
const CLUSTER_STEPS_IN_FLIGHT = 4;

export const NOT_CONNECTED = 'client is not connected';
export const ABORTED = 'not started: an earlier client failed and abort_on_error is set';
export const SHUT_DOWN = 'not started: svcd was shutting down';
export const RUN_CANCELLED = 'not started: the run was cancelled';
export const STAGED_STOPPED =
  'not started: svcd stopped during the staged run; POST /commands/{jid}/rerun?only=failed continues it';
export const maxFailuresReached = (failures: number, max: number): string =>
  `not started: max_failures reached (${failures} jobs failed, max_failures ${max})`;

/** How a staged run ends a child it does not start. */
type NotStarted = 'failed' | 'cancelled' | 'skipped';

/** Someone following a run live (a WebSocket session). */
export interface MultiJobObserver {
  chunk(child: ChildRef, stream: OutputStream, text: string): void;
  /** A child's final record: finished, failed to start, or never started. Once per target. */
  final(child: Job): void;
}

export type ChildRef = Pick<Job, 'jid' | 'client_id' | 'client_name'>;

export interface RunnerDeps {
  /** Dispatches at once in concurrent mode; CONCURRENT_WINDOW unless tuned. */
  window?: number;
  jobs: JobRepository;
  single: JobsService;
  watch: JobWatch;
  clock: Clock;
  log: { warn(obj: object, msg: string): void };
  /** A child was queued for its client (queue_ttl). */
  queued?: (child: Job) => void;
}

export interface RunPlan {
  multiJob: MultiJobSummary;
  targets: TargetClient[];
  run: Omit<JobRun, 'jid'>;
  observer?: MultiJobObserver;
  /** queue_ttl: a client that is not connected gets a `queued` child instead of a failed one. */
  queueTtlSec?: number;
  /** Present for a staged run (batch_size). */
  rollout?: StagedRun;
}

/** A staged run's batches as resolved against its targets, and where it reports its progress. */
export interface StagedRun {
  batchSize: number;
  delayMs: number;
  /** null: no limit. */
  maxFailures: number | null;
  /** The run's children that ended failed or unknown so far. */
  failures(): Promise<number>;
  progress(state: RolloutState): Promise<void>;
}

/**
 * Runs the children of one multi-client job (notes 6.3). Sequential mode dispatches a child and waits for its
 * result before the next; with abort_on_error a child that fails (refused, could not start, or finished
 * `failed`) stops the run and every remaining client gets a failed child saying it was not started. A client
 * that is not connected gets a failed child too but does not abort: it was never tried. `unknown` (timeout)
 * does not abort. Concurrent mode keeps at most CONCURRENT_WINDOW job.run requests open in a sliding window,
 * inserting the children one batch (one INSERT) ahead; nothing per client outlives its dispatch unless a live
 * observer watches. When the dispatch sends jobs together (a cluster), each such batch goes out at once: one
 * request per node holding some of its clients, not one per client.
 */
export class MultiJobRunner {
  private stopping = false;
  /** Why the clients not reached get their record: svcd stops, or the run was cancelled. */
  private stopAs: { reason: string; status: NotStarted };
  private wake: () => void = () => undefined;
  private readonly stopped = new Promise<void>((resolve) => (this.wake = resolve));
  /** Children a live observer is waiting for, by jid. */
  private readonly observed = new Map<string, ChildRef>();
  /** Children are listed by created_at: each step of the run gets a later millisecond than the one before. */
  private lastCreatedMs = 0;

  constructor(
    private readonly deps: RunnerDeps,
    private readonly plan: RunPlan,
  ) {
    this.stopAs = plan.rollout
      ? { reason: STAGED_STOPPED, status: 'skipped' }
      : { reason: SHUT_DOWN, status: 'failed' };
  }

  /** Stops dispatching; the clients not yet started get a failed child. */
  stop(): void {
    this.stopping = true;
    this.wake();
  }

  /** Stops dispatching because the run was cancelled; the clients not yet started get a cancelled child. */
  cancel(): void {
    if (!this.stopping) this.stopAs = { reason: RUN_CANCELLED, status: 'cancelled' };
    this.stop();
  }

  async run(): Promise<void> {
    if (this.plan.rollout) return this.runStaged(this.plan.rollout);
    await this.runPart(this.plan.targets, false);
  }

  /** Resolves true when abort_on_error stopped the part. */
  private runPart(targets: TargetClient[], waitForResults: boolean): Promise<boolean> {
    return this.plan.multiJob.concurrent
      ? this.runConcurrently(targets, waitForResults).then(() => false)
      : this.runSequentially(targets);
  }

  /**
   * Batch by batch: each batch runs as the run's mode says, and the next starts once every job of this one
   * ended (a queued one does not hold it) and batch_delay passed. Once max_failures of the run's jobs failed,
   * the targets not started end `skipped`.
   */
  private async runStaged(staged: StagedRun): Promise<void> {
    const { targets } = this.plan;
    const total = Math.ceil(targets.length / staged.batchSize);
    for (let batch = 0; batch < total; batch += 1) {
      const at = batch * staged.batchSize;
      const rest = () => targets.slice(at + staged.batchSize);
      if (this.stopping) return this.stopStaged(batch, targets.slice(at), this.stopAs.reason);
      const aborted = await this.runPart(targets.slice(at, at + staged.batchSize), true);
      if (aborted) return this.stopStaged(batch + 1, rest(), ABORTED, 'failed');
      if (this.stopping) return this.stopStaged(batch + 1, rest(), this.stopAs.reason);
      if (batch === total - 1) break;
      const failures = await staged.failures();
      if (staged.maxFailures !== null && failures >= staged.maxFailures)
        return this.stopStaged(
          batch + 1,
          rest(),
          maxFailuresReached(failures, staged.maxFailures),
          'skipped',
        );
      const nextBatchAt = new Date(this.deps.clock.now().getTime() + staged.delayMs);
      await staged.progress({ batchesDone: batch + 1, nextBatchAt, stopReason: null });
      await this.pause(staged.delayMs);
    }
    await staged.progress({ batchesDone: total, nextBatchAt: null, stopReason: null });
  }

  private async stopStaged(
    batchesDone: number,
    rest: TargetClient[],
    reason: string,
    status: NotStarted = this.stopAs.status,
  ): Promise<void> {
    await this.plan.rollout?.progress({ batchesDone, nextBatchAt: null, stopReason: reason });
    await this.skip(rest, reason, status);
  }

  /** Waits `ms`, or less when the run is stopped meanwhile. */
  private async pause(ms: number): Promise<void> {
    if (ms <= 0) return;
    let timer: NodeJS.Timeout | undefined;
    const elapsed = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
    try {
      await Promise.race([elapsed, this.stopped]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The observer is gone: stop watching the children whose results it was waiting for. */
  detach(): void {
    for (const jid of this.observed.keys()) this.deps.watch.unwatch(jid);
    this.observed.clear();
  }

  private async runSequentially(targets: TargetClient[]): Promise<boolean> {
    const { multiJob } = this.plan;
    for (let i = 0; i < targets.length; i += 1) {
      const target = targets[i] as TargetClient;
      if (this.stopping) {
        await this.skip(targets.slice(i));
        return false;
      }
      if (!target.connected) {
        const child = this.child(target, this.nextCreatedAt());
        if (this.plan.queueTtlSec !== undefined) await this.insertQueued([child]);
        else await this.insertFailed([child], NOT_CONNECTED);
        continue;
      }
      const status = await this.runOne(target);
      if (multiJob.abort_on_err && status === 'failed') {
        await this.skip(targets.slice(i + 1), ABORTED);
        return true;
      }
    }
    return false;
  }

  /** Runs one child and resolves with its status; undefined when the client went away before it started. */
  private async runOne(target: TargetClient): Promise<JobStatus | 'offline' | undefined> {
    const child = this.child(target, this.nextCreatedAt());
    let settle: (status: JobStatus) => void = () => undefined;
    const finished = new Promise<JobStatus>((resolve) => (settle = resolve));
    this.deps.watch.watch(child.jid, child.client_id, this.listener(child, settle));
    await this.deps.jobs.insert(child);
    const refusal = await this.deps.single.dispatchStored(child, { ...this.plan.run, jid: child.jid });
    if (refusal?.reason === 'offline') return 'offline';
    // The deadline sweep ends an overdue child `unknown` and tells this run; this timer is the fallback when
    // the sweep cannot write (the database is away).
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), child.timeout_sec * 1000 + RESULT_GRACE_MS * 2);
    });
    try {
      return await Promise.race([finished, gaveUp, this.stopped.then(() => undefined)]);
    } finally {
      clearTimeout(timer);
      // A live observer may still get the result later; otherwise nobody waits for it any more.
      if (!this.plan.observer) this.deps.watch.unwatch(child.jid);
    }
  }

  /**
   * A sliding window: at most `size` job.run requests are unanswered at once (a cluster node:
   * CLUSTER_STEPS_IN_FLIGHT times that), and a slot freed by an answer is taken by the next client at once (the
   * answer's write does not hold it). Children are inserted one batch of `size` rows ahead, when a slot frees, so
   * neither rows nor promises pile up for the whole run; a stop takes effect between batches. With
   * `waitForResults` (a batch of a staged run) it resolves once every started job ended too.
   */
  private async runConcurrently(targets: TargetClient[], waitForResults: boolean): Promise<void> {
    const size = Math.min(this.deps.window ?? CONCURRENT_WINDOW, MAX_JOBS_PER_INSERT);
    // A cluster answers each node's share of a step at once, when its slowest client has answered: several steps
    // in flight keep every node busy instead of each step waiting for the one before.
    const slots = new Slots(this.deps.single.dispatchesBatches ? size * CLUSTER_STEPS_IN_FLIGHT : size);
    /** Children answered whose start record or failure is still being written. */
    const writing = new Set<Promise<unknown>>();
    let failure: { err: unknown } | undefined;
    const results: Promise<unknown>[] = [];
    for (let at = 0; at < targets.length && !failure; at += size) {
      await slots.available();
      if (this.stopping) {
        await slots.idle();
        await Promise.all(writing);
        return this.skip(targets.slice(at));
      }
      const batch = targets.slice(at, at + size);
      const createdAt = this.nextCreatedAt();
      const offline = batch.filter((t) => !t.connected).map((t) => this.child(t, createdAt));
      const online = batch.filter((t) => t.connected).map((t) => this.child(t, createdAt));
      if (waitForResults) results.push(...online.map((child) => this.awaitResult(child)));
      else if (this.plan.observer) for (const child of online) this.observe(child);
      if (this.plan.queueTtlSec === undefined) {
        await this.deps.jobs.insertMany([...this.failed(offline, NOT_CONNECTED), ...online]);
        for (const child of offline) this.plan.observer?.final(this.asFailed(child, NOT_CONNECTED));
      } else {
        const queued = offline.map((child) => this.asQueued(child));
        await this.deps.jobs.insertMany([...queued, ...online]);
        this.tellQueued(queued);
      }
      // A slot frees when its client answers; its start record is written along with others meanwhile.
      const track = (dispatched: Promise<unknown>) => {
        const written = dispatched
          .catch((err: unknown) => (failure ??= { err }))
          .finally(() => writing.delete(written));
        writing.add(written);
      };
      if (this.deps.single.dispatchesBatches) {
        // A cluster: the step goes out as one request per node holding some of its clients.
        for (let i = 0; i < online.length; i += 1) await slots.take();
        this.deps.single.dispatchStoredMany(online, this.plan.run, () => slots.release()).forEach(track);
      } else
        for (const child of online) {
          await slots.take();
          track(
            this.deps.single.dispatchStored(child, { ...this.plan.run, jid: child.jid }, () =>
              slots.release(),
            ),
          );
        }
    }
    await slots.idle();
    await Promise.all(writing);
    if (failure) throw failure.err;
    await Promise.race([Promise.all(results), this.stopped]);
  }

  /**
   * Watches a child before it is stored; resolves when its result is stored, when it is overdue (the deadline
   * sweep's fallback, as in runOne), or when the run stops.
   */
  private awaitResult(child: Job): Promise<unknown> {
    let settle: (status: JobStatus) => void = () => undefined;
    const finished = new Promise<JobStatus>((resolve) => (settle = resolve));
    this.deps.watch.watch(child.jid, child.client_id, this.listener(child, settle));
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, child.timeout_sec * 1000 + RESULT_GRACE_MS * 2);
    });
    return Promise.race([finished, gaveUp, this.stopped]).finally(() => {
      clearTimeout(timer);
      if (!this.plan.observer) this.deps.watch.unwatch(child.jid);
    });
  }

  /**
   * Records the remaining clients as children that never started: failed with `reason`, or, without one, as the
   * stop says (failed at shutdown, cancelled when the run was cancelled).
   */
  private async skip(targets: TargetClient[], reason?: string, status?: NotStarted): Promise<void> {
    for (let at = 0; at < targets.length; at += MAX_JOBS_PER_INSERT) {
      const createdAt = this.nextCreatedAt();
      const children = targets.slice(at, at + MAX_JOBS_PER_INSERT).map((t) => this.child(t, createdAt));
      if (reason === undefined) await this.insertFailed(children, this.stopAs.reason, this.stopAs.status);
      else await this.insertFailed(children, reason, status ?? 'failed');
    }
  }

  /** Its TTL counts from the child's own created_at, which can be a millisecond past the clock (ordering). */
  private asQueued(child: Job): Job {
    return queuedJob(child, this.plan.run, this.plan.queueTtlSec ?? 0, new Date(child.created_at));
  }

  private async insertQueued(children: Job[]): Promise<void> {
    const queued = children.map((child) => this.asQueued(child));
    await this.deps.jobs.insertMany(queued);
    this.tellQueued(queued);
  }

  /** Queued children run when their clients connect; an observer hears of them when they end. */
  private tellQueued(queued: Job[]): void {
    for (const child of queued) {
      if (this.plan.observer) this.observe(child);
      this.deps.queued?.(child);
    }
  }

  private async insertFailed(children: Job[], reason: string, status: NotStarted = 'failed'): Promise<void> {
    const failed = this.failed(children, reason).map((child) => ({ ...child, status }));
    await this.deps.jobs.insertMany(failed);
    for (const child of failed) this.plan.observer?.final(child);
  }

  private failed(children: Job[], reason: string): Job[] {
    return children.map((child) => this.asFailed(child, reason));
  }

  private asFailed(child: Job, reason: string): Job {
    const outcome = failedOutcome(reason, this.deps.clock.now());
    return { ...child, status: 'failed', finished_at: outcome.finished_at, error: reason };
  }

  private observe(child: Job): void {
    this.deps.watch.watch(child.jid, child.client_id, this.listener(child));
  }

  /** Passes live output and the final record to the observer; tells a waiting sequential step the status. */
  private listener(child: Job, settle?: (status: JobStatus) => void): JobListener {
    const { observer } = this.plan;
    if (observer) this.observed.set(child.jid, child);
    return {
      chunk: (_jid, stream, text) => observer?.chunk(child, stream, text),
      finished: (jid, status) => {
        settle?.(status);
        if (!observer) return;
        this.observed.delete(jid);
        this.deps.jobs
          .getById(jid)
          .then((job) => job && observer.final(job))
          .catch((err: unknown) => this.deps.log.warn({ err, jid }, 'reading a finished child job failed'));
      },
    };
  }

  private nextCreatedAt(): Date {
    this.lastCreatedMs = Math.max(this.deps.clock.now().getTime(), this.lastCreatedMs + 1);
    return new Date(this.lastCreatedMs);
  }

  private child(target: TargetClient, createdAt: Date): Job {
    const { multiJob, run } = this.plan;
    return {
      ...newJob(
        randomUUID(),
        {
          clientId: target.id,
          clientName: target.name,
          createdBy: multiJob.created_by,
          shownCommand: multiJob.command,
        },
        run,
        createdAt,
      ),
      multi_job_id: multiJob.jid,
    };
  }
}
