import type { Job, JobEnd, JobRun, JobRunReply, JobStatus, ListQuery } from '@svc/protocol';

/** Jobs per status; every status is present (0 when none). */
export type JobStatusCounts = Record<JobStatus, number>;

export const noJobs = (): JobStatusCounts => ({
  running: 0,
  successful: 0,
  failed: 0,
  unknown: 0,
  queued: 0,
  expired: 0,
  cancelled: 0,
  skipped: 0,
});

/** What a finished job adds to its stored record. Output is already decoded to text. */
export interface JobOutcome extends Omit<JobEnd, 'stdout_truncated' | 'stderr_truncated'> {
  stdout: string;
  stderr: string;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
  /** svcd presumed this `unknown` because no result came in time; a result from the agent still replaces it. */
  presumed?: boolean;
}

/**
 * How long past its timeout_sec svcd waits for a job's result before presuming it `unknown`: the agent may take
 * up to 30 s to answer job.run, and the result needs time to arrive. Counted from the job's creation.
 */
export const RESULT_GRACE_MS = 90_000;

/** When svcd stops waiting for the result of a job created now (see RESULT_GRACE_MS). */
export const resultDueAt = (job: Pick<Job, 'created_at' | 'timeout_sec'>): number =>
  Date.parse(job.created_at) + job.timeout_sec * 1000 + RESULT_GRACE_MS;

/** A job svcd no longer expects a result for in time. */
export interface OverdueJob {
  jid: string;
  clientId: string;
}

export interface FinishedJob {
  clientId: string;
  jid: string;
  outcome: JobOutcome;
  /** The agent's answer to job.run, when it is recorded together with the result (the start is kept either way). */
  started?: JobRunReply;
}

export interface StartedJob {
  jid: string;
  started: JobRunReply;
}

/** A queued job svcd is about to send: the job.run it sends. */
export type ClaimedJob = JobRun;

/** A queued job that ends without running (expired, cancelled) with this status and reason. */
export interface EndedQueuedJob {
  jid: string;
  status: 'expired' | 'cancelled';
  error: string;
  finished_at: string;
}

/** A job as it is stored; a queued script job also keeps its script (base64) until it is delivered. */
export type StoredJob = Job & { queuedScript?: string };

/** Persistence of jobs; every engine stores the same record. */
export interface JobRepository {
  insert(job: StoredJob): Promise<void>;
  /** Stores several jobs at once (one statement); at most MAX_JOBS_PER_INSERT. */
  insertMany(jobs: readonly StoredJob[]): Promise<void>;
  /** The ids of that client's `queued` jobs not expired at `now`, oldest first, at most `limit`. */
  queuedFor(clientId: string, now: Date, limit: number): Promise<string[]>;
  /** Which of these clients have `queued` jobs not expired at `now`. */
  clientsWithQueued(clientIds: readonly string[], now: Date): Promise<Set<string>>;
  /**
   * Takes a `queued` job of that client for delivery when it has not expired at `now`: it becomes `running` with
   * a result deadline counted from `now`; resolves with the job.run to send, or undefined (not queued any more,
   * or expired).
   */
  claimQueued(clientId: string, jid: string, now: Date): Promise<ClaimedJob | undefined>;
  /** Ends `queued` jobs without running them; one answer per item (false: it was not queued any more). */
  endQueued(items: readonly EndedQueuedJob[]): Promise<boolean[]>;
  /** `queued` jobs whose queue_ttl passed at `now`, at most `limit`, soonest expired first. */
  expiredQueued(now: Date, limit: number): Promise<OverdueJob[]>;
  /**
   * The children of a run in one status (jid and client), at most `limit`; with `unconfirmed` only those whose
   * start no agent's answer recorded yet.
   */
  childrenIn(
    multiJobId: string,
    status: JobStatus,
    limit: number,
    unconfirmed?: boolean,
  ): Promise<OverdueJob[]>;
  /** The children of a multi-client job, oldest first. */
  listByMultiJob(multiJobId: string): Promise<Job[]>;
  /** The children of a multi-client job, filtered, sorted and paged by the list grammar; count before paging. */
  listChildren(multiJobId: string, query: ListQuery): Promise<{ data: Job[]; count: number }>;
  /** How many children of a multi-client job there are in each status (one indexed query, no rows read out). */
  countByMultiJob(multiJobId: string): Promise<JobStatusCounts>;
  /** The job with that id, whichever client it belongs to. */
  getById(jid: string): Promise<Job | undefined>;
  /** The job of that client, or undefined. */
  get(clientId: string, jid: string): Promise<Job | undefined>;
  /** Records the agent's pid and start time; leaves the status alone (the result may already be in). */
  markStarted(jid: string, started: JobRunReply): Promise<void>;
  /**
   * Stores the outcome when the job belongs to `clientId` and is still `running` or has an `unknown` svcd only
   * presumed; false otherwise (unknown job, a job of another client, or a result already stored), so a result
   * is stored at most once. A stored outcome ends the wait for a result (no deadline any more).
   */
  finish(clientId: string, jid: string, outcome: JobOutcome): Promise<boolean>;
  /** Several `finish` at once, in one transaction; one answer per item. */
  finishMany(items: readonly FinishedJob[]): Promise<boolean[]>;
  /** Several `markStarted` at once, in one transaction. */
  markStartedMany(items: readonly StartedJob[]): Promise<void>;
  /** `markStartedMany` and `finishMany` in one transaction; one answer per result. */
  recordMany(starts: readonly StartedJob[], finishes: readonly FinishedJob[]): Promise<boolean[]>;
  /** Running jobs whose result was due at or before `now`, at most `limit`, most overdue first. */
  overdue(now: Date, limit: number): Promise<OverdueJob[]>;
  /**
   * The jobs of those clients created before `before`, whose start an agent confirmed (with `unconfirmed` also
   * those not confirmed yet), that still wait for a result: `running`, or `unknown` as svcd presumed it. A few
   * hundred clients at a time (one IN list).
   */
  awaitingResult(
    clientIds: readonly string[],
    before: Date,
    unconfirmed?: boolean,
  ): Promise<{ clientId: string; jid: string }[]>;
  /** The latest finished_at among the children of a multi-client job; undefined when none has one. */
  lastFinishedAt(multiJobId: string): Promise<string | undefined>;
  /** The clients that have a child job in that multi-client job. */
  childClientIds(multiJobId: string): Promise<string[]>;
  /** That client's jobs, filtered, sorted and paged by the list grammar; count before paging. */
  list(clientId: string, query: ListQuery): Promise<{ data: Job[]; count: number }>;
}

/** Rows per multi-row INSERT: 25 columns × 256 stays under every engine's bound-parameter limit. */
export const MAX_JOBS_PER_INSERT = 256;

/** Why the agent did not start a job. */
export type DispatchFailure = 'offline' | 'disabled' | 'refused' | 'failed' | 'unsupported';

export class DispatchError extends Error {
  constructor(
    readonly reason: DispatchFailure,
    message: string,
  ) {
    super(message);
    this.name = 'DispatchError';
  }
}

/** What the jobs domain needs to know about a client. */
export interface JobClients {
  /** undefined for an unknown client. */
  describe(clientId: string): { name: string; connected: boolean } | undefined;
}

/** Where the gateway hands what agents say about jobs. */
export interface JobResultSink {
  /**
   * A finished result; resolves true when stored (the agent may then forget it). The output is raw bytes, each
   * stream already cut to what the agent kept; `capped` says svcd cut more.
   */
  store(clientId: string, jid: string, result: RawJobResult): Promise<boolean>;
  /**
   * The client's agent said hello at `at` listing the jobs it still has; jobs it started before then that it
   * does not list will never get a result. `held` is live: the connection adds every job it sends meanwhile.
   */
  agentHolds(clientId: string, held: ReadonlySet<string>, at: Date): Promise<void>;
}

export interface RawJobResult {
  end: JobEnd;
  stdout: Buffer;
  stderr: Buffer;
  /** svcd itself cut the stream at its own limit. */
  stdoutCapped: boolean;
  stderrCapped: boolean;
}

/** Jobs through one live agent connection; rejects with DispatchError. */
export interface JobAgent {
  run(job: JobRun): Promise<JobRunReply>;
  /** Asks the agent to kill the job's process group; false when it has no running process for it. */
  cancel(jid: string): Promise<boolean>;
}
