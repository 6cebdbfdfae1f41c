import { randomUUID } from 'node:crypto';
import {
  AppError,
  ERROR_CODES,
  type Job,
  type JobCreated,
  type JobRun,
  type ListQuery,
  type MultiCommandBody,
  type MultiJob,
  type MultiJobSummary,
  type MultiScriptBody,
  type RerunSelection,
  type RunCancelled,
} from '@svc/protocol';
import { rolloutProgress, stagedRun } from './rollout.js';
import type { Clock } from '../auth/ports.js';
import { jobErrors } from './job-errors.js';
import type { JobWatch } from './job-watch.js';
import { CANCELLED_QUEUED, type JobsService } from './jobs-service.js';
import type { AgentDispatch } from '../dispatch.js';
import { MultiJobRunner, type MultiJobObserver } from './multi-job-runner.js';
import type { ClientGroups, MultiJobRepository, TargetClients } from './multi-job-ports.js';
import { noJobs, type JobRepository, type JobStatusCounts } from './ports.js';
import { envNotKept, nothingToRerun, RERUN_STATUSES, rerunBody, rerunClientIds } from './run-again.js';
import { EXPORT_PAGE, runCsv } from './run-export.js';
import { INTERRUPTED, STAGED_INTERRUPTED, recordNotStarted, startNotRecorded } from './run-recovery.js';
import { runStatus } from './run-status.js';
import { resolveTargets, targetIdsNow, type Targeting } from './targets.js';
import { resolveRunEnv, storedEnvOf, type RunRequester, type RunSecretSource } from './run-env.js';
import { RunFollow, type FollowObserver } from './run-follow.js';

export interface MultiJobsDeps {
  /** Dispatches at once in concurrent mode (tests shorten it). */
  window?: number;
  multiJobs: MultiJobRepository;
  jobs: JobRepository;
  single: JobsService;
  clients: TargetClients;
  groups: ClientGroups;
  watch: JobWatch;
  /** Reaches the agents of running children when a run is cancelled. */
  dispatch: Pick<AgentDispatch, 'cancelJob'>;
  clock: Clock;
  log: { warn(obj: object, msg: string): void };
  /** Told when a run has dispatched all its clients (or stopped), with how many it targeted and its jid. */
  afterRun?: (targets: number, jid: string) => void;
  /** Where the vault references of a run's env are resolved; without it they are refused. */
  secrets?: RunSecretSource;
}

/** A started multi-client job: its id, how many clients it targets, and a handle for a live observer. */
export interface StartedMultiJob extends JobCreated {
  targets: number;
  /** Stops the observer's watching of children that have not finished yet. */
  detach(): void;
}

/** The run a caller asks for, as its access check sees it (targets resolved). */
export interface RunToCheck {
  targetIds: readonly string[];
  /** The command, or the script's text. */
  command: string;
  isScript: boolean;
}

/**
 * What a run belongs to (the schedule that started it), whose vault rights resolve its env, and the caller's
 * access check (core/access).
 */
export interface RunLink {
  scheduleId?: string;
  requester?: RunRequester;
  /** Throws to refuse the whole run before anything is stored or sent. */
  check?: (run: RunToCheck) => void;
}

/**
 * The clients a caller may see (core/access ClientScope): a limited scope sees only the runs whose every target
 * it holds.
 */
export interface RunScope {
  readonly limited: boolean;
  has(clientId: string): boolean;
}

/** A run's overall status (see multiJobSchema). */
type RunState = Pick<MultiJob, 'status' | 'finished_at'>;

function countByStatus(jobs: readonly Job[]): JobStatusCounts {
  const counts = noJobs();
  for (const job of jobs) counts[job.status] += 1;
  return counts;
}

const lastFinished = (jobs: readonly Job[]): string | undefined =>
  jobs.reduce<string | undefined>(
    (last, job) =>
      job.finished_at !== null && (last === undefined || job.finished_at > last) ? job.finished_at : last,
    undefined,
  );

/** Children read per query when a run is cancelled. */
const CANCEL_PAGE = 256;
/** Running children of one run a cancel reaches (a run's targets are at most 100,000). */
const MAX_RUN_CHILDREN = 100_000;

const runEnded = (jid: string) =>
  new AppError(
    'conflict',
    ERROR_CODES.jobEnded,
    `Multi-client job '${jid}' cannot be cancelled: it has ended (no child is queued or running)`,
    'only a run with queued or running jobs can be cancelled',
  );

const multiJobNotFound = (jid: string) =>
  new AppError('not_found', ERROR_CODES.multiJobNotFound, `Multi-client job '${jid}' not found`);

/** Which interrupted runs a cluster node ends: those of coordinators that are gone, taken over one at a time. */
export interface RecoveryScope {
  /** This node, which becomes the coordinator of the runs it ends. */
  nodeId: string;
  /** Whether the run of this coordinator (null: none recorded) is to be ended. */
  ends(coordinator: string | null): boolean;
  /** What the failed children of the clients the run had not reached say. */
  reason(coordinator: string | null): string;
}

/**
 * Commands and scripts on many clients (spec 4.5, 4.6): resolves the targets, stores the multi-client job and
 * runs it in the background; the caller gets the jid at once. Runs still going at shutdown are stopped, and
 * the clients they had not started get failed children, so every target ends up with a record.
 */
export class MultiJobsService {
  private readonly running = new Map<MultiJobRunner, Promise<void>>();
  /** The runners still dispatching, by run id (a cancel stops them). */
  private readonly runners = new Map<string, MultiJobRunner>();
  private closed = false;

  constructor(private readonly deps: MultiJobsDeps) {}

  runCommand(
    body: MultiCommandBody,
    createdBy: string,
    observer?: MultiJobObserver,
    link: RunLink = {},
  ): Promise<StartedMultiJob> {
    return this.start(body, createdBy, { command: body.command, is_script: false }, observer, link);
  }

  runScript(
    body: MultiScriptBody,
    createdBy: string,
    observer?: MultiJobObserver,
    link: RunLink = {},
  ): Promise<StartedMultiJob> {
    const text = Buffer.from(body.script, 'base64').toString('utf8');
    if (text.trim() === '') throw jobErrors.emptyScript();
    return this.start(
      body,
      createdBy,
      { command: text, is_script: true, script: body.script },
      observer,
      link,
    );
  }

  /**
   * The multi-client job with its children, its overall status and how many children are in each status.
   * Without `withJobs` the children are only counted (one indexed query), and without `withTargets` its
   * targeting is left out (null), so following a run of many clients stays cheap.
   */
  async get(
    jid: string,
    withJobs = true,
    withTargets = true,
  ): Promise<{ job: MultiJobSummary & RunState & Partial<MultiJob>; counts: JobStatusCounts }> {
    const stored = await this.deps.multiJobs.get(jid, withTargets);
    if (!stored) throw multiJobNotFound(jid);
    const jobs = withJobs ? await this.deps.jobs.listByMultiJob(jid) : undefined;
    const counts = jobs ? countByStatus(jobs) : await this.deps.jobs.countByMultiJob(jid);
    const status = runStatus(counts, stored.targetCount);
    // An ended run's finished_at is its last child's end (a run without children ended when it started).
    const lastEnd = async () =>
      (jobs ? lastFinished(jobs) : await this.deps.jobs.lastFinishedAt(jid)) ?? stored.summary.started_at;
    const state: RunState = { status, finished_at: status === 'running' ? null : await lastEnd() };
    const rollout = rolloutProgress(stored, counts);
    return {
      job: { ...stored.summary, ...state, ...(jobs ? { jobs } : {}), ...(rollout ? { rollout } : {}) },
      counts,
    };
  }

  /** One page of the children of a multi-client job (the list grammar of MULTI_JOB_CHILDREN). */
  async children(jid: string, query: ListQuery): Promise<{ data: Job[]; count: number }> {
    if (!(await this.deps.multiJobs.get(jid, false))) throw multiJobNotFound(jid);
    return this.deps.jobs.listChildren(jid, query);
  }

  /** The run as CSV, one chunk per page of children; 404 before the first chunk for an unknown run. */
  async exportCsv(jid: string): Promise<AsyncGenerator<string>> {
    if (!(await this.deps.multiJobs.get(jid, false))) throw multiJobNotFound(jid);
    return runCsv((offset, limit) => this.childPage(jid, offset, limit));
  }

  /** One page of a run's children in the order the run reached them, optionally only some statuses. */
  private async childPage(jid: string, offset: number, limit: number, statuses?: readonly string[]) {
    const filters = statuses ? [{ fields: ['status'], values: [...statuses] }] : [];
    const query = {
      sort: [
        { field: 'created_at', direction: 'asc' as const },
        { field: 'client_id', direction: 'asc' as const },
      ],
      filters,
      page: { offset, limit },
    };
    return (await this.deps.jobs.listChildren(jid, query)).data;
  }

  private async *childPages(jid: string, statuses?: readonly string[]): AsyncGenerator<Job[]> {
    for (let offset = 0; ; offset += EXPORT_PAGE) {
      const page = await this.childPage(jid, offset, EXPORT_PAGE, statuses);
      yield page;
      if (page.length < EXPORT_PAGE) return;
    }
  }

  /**
   * A new run with the options of run `jid` on its clients that did not succeed (`failed`), or on every client
   * it has a child for (`all`); clients removed since are left out. 409 when no client is left, or when the run's
   * env had plain values (not kept). Its vault references are resolved again for `link.requester`.
   */
  async rerun(
    jid: string,
    only: RerunSelection,
    createdBy: string,
    link: RunLink = {},
  ): Promise<StartedMultiJob> {
    const stored = await this.deps.multiJobs.get(jid, false);
    if (!stored) throw multiJobNotFound(jid);
    if (stored.summary.env_plain?.length) throw envNotKept(jid, stored.summary.env_plain);
    // Page by page, keeping only the client ids: a run on 10,000 clients never has all its output in memory.
    const ids: string[] = [];
    for await (const page of this.childPages(jid, only === 'failed' ? RERUN_STATUSES : undefined))
      ids.push(...rerunClientIds(page, only));
    const known = [...new Set(ids)].filter((id) => this.deps.clients.get(id) !== undefined);
    if (known.length === 0) throw nothingToRerun(jid, only);
    const body = rerunBody(stored.summary, known);
    return 'script' in body
      ? this.runScript(body.script, createdBy, undefined, link)
      : this.runCommand(body.command, createdBy, undefined, link);
  }

  /**
   * Completes the runs an earlier svcd was killed in the middle of (in a cluster also the runs of a coordinator
   * node that is gone): every client such a run had not reached gets a failed child saying so, so each target has
   * a record, and (in a cluster) a child stored whose start was never recorded is presumed `unknown`. Children
   * left running end through their results, their agents' hellos or their deadlines; the run's status follows
   * them. Call before accepting new runs (a run of this process is not ended yet either).
   */
  async recoverInterrupted(scope?: RecoveryScope): Promise<number> {
    const runs = await this.deps.multiJobs.interrupted();
    let ended = 0;
    for (const { summary, targetIds, coordinator } of runs) {
      if (scope) {
        if (!scope.ends(coordinator)) continue;
        // Another node may be ending the same run: the one that takes it over does.
        if (!(await this.deps.multiJobs.takeOverRun(summary.jid, coordinator, scope.nodeId))) continue;
      }
      if (summary.batch_size === undefined)
        await recordNotStarted(this.deps, summary, targetIds, scope?.reason(coordinator) ?? INTERRUPTED);
      else await this.endStaged(summary, targetIds);
      const otherNode = scope && coordinator !== null && coordinator !== scope.nodeId ? coordinator : null;
      // A cluster: children stored and maybe sent, whose agents' answers the stopped coordinator never recorded.
      if (scope) {
        const unconfirmed = await this.deps.jobs.childrenIn(summary.jid, 'running', MAX_RUN_CHILDREN, true);
        await this.deps.single.presumeUnconfirmed(unconfirmed, startNotRecorded(otherNode));
      }
      await this.deps.multiJobs.markRunEnded(summary.jid, this.deps.clock.now());
      // The children still running end on the nodes holding their clients; the run ends with the last of them.
      if (otherNode !== null) this.deps.afterRun?.(targetIds.length, summary.jid);
      ended += 1;
    }
    return ended;
  }

  /** A staged run is not continued after a crash: its targets not started end `skipped`, and it says why. */
  private async endStaged(summary: MultiJobSummary, targetIds: readonly string[]): Promise<void> {
    const stored = await this.deps.multiJobs.get(summary.jid, false);
    await recordNotStarted(this.deps, summary, targetIds, STAGED_INTERRUPTED, 'skipped');
    await this.deps.multiJobs.saveRollout(summary.jid, {
      batchesDone: stored?.rollout?.batchesDone ?? 0,
      nextBatchAt: null,
      stopReason: STAGED_INTERRUPTED,
    });
  }

  /**
   * DELETE of a run: stops dispatching (clients not reached get `cancelled` children), cancels its queued
   * children and asks the agents of its running children to kill them (they report `cancelled`). 404 unknown;
   * 409 when nothing of it was left to cancel.
   */
  async cancel(jid: string): Promise<RunCancelled> {
    if (!(await this.deps.multiJobs.get(jid, false))) throw multiJobNotFound(jid);
    let cancelled = 0;
    const runner = this.runners.get(jid);
    if (runner) {
      const before = await this.deps.jobs.countByMultiJob(jid);
      runner.cancel();
      await this.running.get(runner);
      cancelled += (await this.deps.jobs.countByMultiJob(jid)).cancelled - before.cancelled;
    }
    for (;;) {
      const queued = await this.deps.jobs.childrenIn(jid, 'queued', CANCEL_PAGE);
      for (const child of queued)
        if (await this.deps.single.endQueued(child.jid, 'cancelled', CANCELLED_QUEUED)) cancelled += 1;
      if (queued.length < CANCEL_PAGE) break;
    }
    let cancelling = 0;
    let notCancelled = 0;
    const running = await this.deps.jobs.childrenIn(jid, 'running', MAX_RUN_CHILDREN);
    for (let at = 0; at < running.length; at += CANCEL_PAGE) {
      const outcomes = await Promise.allSettled(
        running
          .slice(at, at + CANCEL_PAGE)
          .map((child) => this.deps.dispatch.cancelJob(child.clientId, child.jid)),
      );
      for (const outcome of outcomes)
        if (outcome.status === 'fulfilled' && outcome.value) cancelling += 1;
        else if (outcome.status === 'rejected') notCancelled += 1;
    }
    if (!runner && cancelled + cancelling + notCancelled === 0) throw runEnded(jid);
    return { jid, cancelled, cancelling, not_cancelled: notCancelled };
  }

  /**
   * Follows a run or a job already running, wherever it was started (see RunFollow); `start` it with a jid.
   * With a limited `scope`, a run or job outside it is answered as unknown.
   */
  follow(observer: FollowObserver, pollMs?: number, scope?: RunScope): RunFollow {
    return new RunFollow(
      {
        jobs: this.deps.jobs,
        multi: this,
        watch: this.deps.watch.another(),
        log: this.deps.log,
        ...(pollMs === undefined ? {} : { pollMs }),
        ...(scope ? { scope } : {}),
      },
      observer,
    );
  }

  /** The runs, or with a limited scope only those whose every target is in it (issue 28 §2). */
  list(query: ListQuery, scope?: RunScope): Promise<{ data: MultiJobSummary[]; count: number }> {
    if (!scope?.limited) return this.deps.multiJobs.list(query);
    return this.deps.multiJobs.listWhere(query, (id) => scope.has(id));
  }

  /**
   * 404 ERR_MULTI_JOB_NOT_FOUND, as for an unknown run, when a limited scope lacks one of the run's targets (or
   * the run, stored before 010, has none recorded): such a run is not shown, read, followed, cancelled or rerun.
   */
  async assertVisible(jid: string, scope: RunScope | undefined): Promise<void> {
    if (!scope?.limited) return;
    const ids = await this.deps.multiJobs.targetIds(jid);
    if (!ids || ids.length === 0 || !ids.every((id) => scope.has(id))) throw multiJobNotFound(jid);
  }

  /**
   * The clients `targeting` reaches now, for a scope check of something that resolves its targets later (a
   * schedule): unknown client ids are kept (no scope holds them); an unknown group or an empty match adds none.
   */
  targetIdsNow(targeting: Targeting): Promise<string[]> {
    return targetIdsNow(targeting, this.deps.clients, this.deps.groups);
  }

  /** Stops every run and waits until each has recorded its remaining clients. */
  async close(): Promise<void> {
    this.closed = true;
    for (const runner of this.running.keys()) runner.stop();
    await Promise.all(this.running.values());
  }

  private async start(
    body: MultiCommandBody | MultiScriptBody,
    createdBy: string,
    what: { command: string; is_script: boolean; script?: string },
    observer: MultiJobObserver | undefined,
    link: RunLink,
  ): Promise<StartedMultiJob> {
    if (this.closed)
      throw new AppError('unavailable', ERROR_CODES.shuttingDown, 'svcd is shutting down', 'try again later');
    const targets = await resolveTargets(body, this.deps.clients, this.deps.groups);
    link.check?.({ targetIds: targets.map((t) => t.id), command: what.command, isScript: what.is_script });
    // Before anything is stored: a locked vault or a refused entry leaves no run behind.
    const env = await resolveRunEnv(body.env, {
      source: this.deps.secrets,
      requester: link.requester,
      queued: body.queue_ttl !== undefined,
    });
    const multiJob: MultiJobSummary = {
      jid: randomUUID(),
      started_at: this.deps.clock.now().toISOString(),
      created_by: createdBy,
      client_ids: body.client_ids?.length ? body.client_ids : null,
      group_ids: body.group_ids?.length ? body.group_ids : null,
      tags: body.tags ?? null,
      labels: body.labels ?? null,
      command: what.command,
      cwd: body.cwd,
      interpreter: body.interpreter,
      is_sudo: body.is_sudo,
      is_script: what.is_script,
      timeout_sec: body.timeout_sec,
      concurrent: body.execute_concurrently,
      abort_on_err: body.abort_on_error,
      ...(link.scheduleId === undefined ? {} : { schedule_id: link.scheduleId }),
      ...(body.queue_ttl === undefined ? {} : { queue_ttl: body.queue_ttl }),
      ...(body.timeout_kill === undefined ? {} : { timeout_kill: body.timeout_kill }),
      ...(body.batch_size === undefined ? {} : { batch_size: body.batch_size }),
      ...(body.batch_delay === undefined ? {} : { batch_delay: body.batch_delay }),
      ...(body.max_failures === undefined ? {} : { max_failures: body.max_failures }),
      // The references only, so a rerun can resolve them again; never a value.
      ...storedEnvOf(body.env),
    };
    await this.deps.multiJobs.insert(
      multiJob,
      targets.map((target) => target.id),
    );
    const run: Omit<JobRun, 'jid'> = {
      command: what.is_script ? '' : what.command,
      ...(what.script === undefined ? {} : { script: what.script }),
      interpreter: body.interpreter,
      cwd: body.cwd,
      is_sudo: body.is_sudo,
      timeout_sec: body.timeout_sec,
      ...(body.timeout_kill ? { timeout_kill: true } : {}),
      ...env,
    };
    const queued = (child: Job) =>
      this.deps.single.queue.queued(
        child.client_id,
        child,
        () => this.deps.clients.get(child.client_id)?.connected === true,
      );
    const runner = new MultiJobRunner(
      { ...this.deps, queued },
      {
        multiJob,
        targets,
        run,
        ...(observer ? { observer } : {}),
        ...(body.queue_ttl === undefined ? {} : { queueTtlSec: body.queue_ttl }),
        ...(multiJob.batch_size === undefined
          ? {}
          : { rollout: stagedRun(multiJob, targets.length, this.deps.jobs, this.deps.multiJobs) }),
      },
    );
    this.runners.set(multiJob.jid, runner);
    const done = runner
      .run()
      .then(() => this.deps.multiJobs.markRunEnded(multiJob.jid, this.deps.clock.now()))
      .catch((err: unknown) => this.deps.log.warn({ err, jid: multiJob.jid }, 'multi-client job stopped'))
      .finally(() => {
        this.running.delete(runner);
        this.runners.delete(multiJob.jid);
        this.deps.afterRun?.(targets.length, multiJob.jid);
      });
    this.running.set(runner, done);
    return { jid: multiJob.jid, targets: targets.length, detach: () => runner.detach() };
  }
}
