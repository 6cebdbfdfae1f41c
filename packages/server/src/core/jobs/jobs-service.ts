import { randomUUID } from 'node:crypto';
import type {
  CommandBody,
  Job,
  JobCancelled,
  JobCreated,
  JobRun,
  JobRunReply,
  ListQuery,
  ScriptBody,
} from '@svc/protocol';
import type { Clock } from '../auth/ports.js';
import { GroupCommit } from './group-commit.js';
import {
  MAX_OUTPUT_BYTES_PER_BATCH,
  MAX_WRITES_PER_BATCH,
  outputBytes,
  writeJobs,
  type JobWrite,
} from './job-writes.js';
import { jobErrors } from './job-errors.js';
import type { AgentDispatch } from '../dispatch.js';
import type { ClientEvents } from '../clients/client-events.js';
import { JobQueue, type JobQueueTuning } from './job-queue.js';
import { resolveRunEnv, type ResolvedEnv, type RunRequester, type RunSecretSource } from './run-env.js';
import {
  DispatchError,
  RESULT_GRACE_MS,
  type JobClients,
  type JobOutcome,
  type JobRepository,
  type JobResultSink,
  type OverdueJob,
  type RawJobResult,
  type StoredJob,
} from './ports.js';

const DISPATCH_FAILURE_PREFIX: Record<DispatchError['reason'], string> = {
  offline: 'not started: ',
  disabled: 'not started: ',
  refused: 'refused by the client: ',
  failed: 'could not start: ',
  unsupported: 'could not start: ',
};

/** Runs commands and scripts on one client and keeps their jobs (spec 4.5, 4.6). */
/** The clients of a lost node asked about in one query. */
const LOST_CLIENTS_PER_QUERY = 500;

export class JobsService implements JobResultSink {
  /** Results and starts arriving together (many clients at once) share transactions. */
  private readonly writes: GroupCommit<JobWrite, boolean>;
  /** Jobs queued for clients that are not connected (queue_ttl): their delivery and expiry. */
  readonly queue: JobQueue;
  private readonly secrets: RunSecretSource | undefined;

  constructor(
    private readonly repository: JobRepository,
    private readonly clients: JobClients,
    private readonly dispatch: Pick<AgentDispatch, 'runJob' | 'runJobs' | 'cancelJob' | 'ensureReachable'>,
    private readonly clock: Clock,
    /** Told when a result is stored (`jobFinished`), so runners and live sessions learn that a job ended. */
    private readonly events?: Pick<ClientEvents, 'publish'>,
    queue: {
      tuning?: JobQueueTuning;
      log?: { warn(obj: object, msg: string): void };
      /** Where the vault references of a run's env are resolved; without it they are refused. */
      secrets?: RunSecretSource;
    } = {},
  ) {
    this.secrets = queue.secrets;
    this.queue = new JobQueue(repository, this, clock, queue.tuning, queue.log);
    this.writes = new GroupCommit(
      (items) => writeJobs(repository, items),
      MAX_WRITES_PER_BATCH,
      outputBytes,
      MAX_OUTPUT_BYTES_PER_BATCH,
    );
  }

  /** `requester` (the caller's user) is whose vault rights resolve the references in `env`. */
  async runCommand(
    clientId: string,
    body: CommandBody,
    createdBy: string,
    requester?: RunRequester,
  ): Promise<JobCreated> {
    const env = await this.resolveEnv(clientId, body, requester);
    return this.start(
      clientId,
      createdBy,
      { ...options(body), command: body.command, ...env },
      body.command,
      body.queue_ttl,
    );
  }

  /** The job shows the script's text as its command, as OpenRPort does. */
  async runScript(
    clientId: string,
    body: ScriptBody,
    createdBy: string,
    requester?: RunRequester,
  ): Promise<JobCreated> {
    const text = Buffer.from(body.script, 'base64').toString('utf8');
    if (text.trim() === '') throw jobErrors.emptyScript();
    const env = await this.resolveEnv(clientId, body, requester);
    return this.start(
      clientId,
      createdBy,
      { ...options(body), command: '', script: body.script, ...env },
      text,
      body.queue_ttl,
    );
  }

  /** The run's env for its job.run; rejects (nothing runs) for an unknown client or an unusable reference. */
  private async resolveEnv(
    clientId: string,
    body: CommandBody | ScriptBody,
    requester: RunRequester | undefined,
  ): Promise<ResolvedEnv> {
    if (body.env === undefined) return {};
    if (!this.clients.describe(clientId)) throw jobErrors.clientNotFound(clientId);
    return resolveRunEnv(body.env, {
      source: this.secrets,
      requester,
      clientId,
      queued: body.queue_ttl !== undefined,
    });
  }

  /**
   * DELETE of one job: a queued job ends `cancelled` at once; a running one is killed by its agent (process
   * group, SIGTERM then SIGKILL), which reports `cancelled` with the output so far. 404 unknown, 409 when it
   * has ended, its client is not connected, or its agent cannot cancel.
   */
  async cancel(clientId: string, jid: string): Promise<JobCancelled> {
    const job = await this.get(clientId, jid);
    if (job.status === 'queued') {
      if (await this.endQueued(jid, 'cancelled', CANCELLED_QUEUED)) return { jid, status: 'cancelled' };
      // Delivered meanwhile: it runs now.
    } else if (job.status !== 'running') throw jobErrors.jobEnded(jid, job.status);
    let running: boolean;
    try {
      running = await this.dispatch.cancelJob(clientId, jid);
    } catch (err) {
      if (err instanceof DispatchError) throw jobErrors.cannotCancel(jid, err.message);
      throw err;
    }
    if (!running) throw jobErrors.jobEnded(jid, 'ended on the client (its result is on its way)');
    return { jid, status: 'cancelling' };
  }

  /** Ends a queued job without running it; false when it was not queued any more. */
  async endQueued(jid: string, status: 'expired' | 'cancelled', error: string): Promise<boolean> {
    const [ended] = await this.repository.endQueued([
      { jid, status, error, finished_at: this.clock.now().toISOString() },
    ]);
    if (ended) this.events?.publish('jobFinished', { jid, status });
    return ended === true;
  }

  /** Ends `expired` every queued job whose queue_ttl has passed, in batches; resolves with how many. */
  async expireQueued(batch = 256): Promise<number> {
    let ended = 0;
    for (;;) {
      const now = this.clock.now();
      const due = await this.repository.expiredQueued(now, batch);
      if (due.length === 0) return ended;
      const items = due.map(({ jid, clientId }) => ({
        jid,
        status: 'expired' as const,
        error: expiredReason(clientId),
        finished_at: now.toISOString(),
      }));
      const stored = await this.repository.endQueued(items);
      due.forEach(({ jid }, i) => {
        if (stored[i]) this.events?.publish('jobFinished', { jid, status: 'expired' });
      });
      ended += stored.filter(Boolean).length;
      if (due.length < batch) return ended;
    }
  }

  async get(clientId: string, jid: string): Promise<Job> {
    const job = await this.repository.get(clientId, jid);
    if (!job) throw jobErrors.jobNotFound(clientId, jid);
    return job;
  }

  list(clientId: string, query: ListQuery): Promise<{ data: Job[]; count: number }> {
    if (!this.clients.describe(clientId)) throw jobErrors.clientNotFound(clientId);
    return this.repository.list(clientId, query);
  }

  /**
   * Stores a result the client's agent sent, once, and only for a running job of that client. Output becomes
   * UTF-8 text; bytes that are not UTF-8 turn into U+FFFD.
   */
  async store(clientId: string, jid: string, result: RawJobResult): Promise<boolean> {
    const { end } = result;
    const stored = await this.writes.submit({
      finish: {
        clientId,
        jid,
        outcome: {
          status: end.status,
          exit_code: end.exit_code,
          finished_at: end.finished_at,
          error: end.error,
          stdout: result.stdout.toString('utf8'),
          stderr: result.stderr.toString('utf8'),
          stdout_truncated: end.stdout_truncated || result.stdoutCapped,
          stderr_truncated: end.stderr_truncated || result.stderrCapped,
        },
      },
    });
    if (stored) this.events?.publish('jobFinished', { jid, status: end.status });
    return stored;
  }

  /**
   * The agent said hello listing the jobs it still has: every job of that client an agent started before the
   * hello that still waits for a result (running, or presumed unknown) and is not listed ends `unknown` for
   * good, since no result can come any more. Listed jobs are left alone: their results follow the hello as
   * replays. A job not confirmed started yet is left to its deadline, and one sent on the new connection is in
   * `held` (live), so a job dispatched while this runs is never ended by it.
   */
  async agentHolds(clientId: string, held: ReadonlySet<string>, at: Date): Promise<void> {
    const waiting = await this.repository.awaitingResult([clientId], at);
    const lost = waiting.map(({ jid }) => jid).filter((jid) => !held.has(jid));
    if (lost.length === 0) return;
    const outcome = unknownOutcome(LOST_ON_RECONNECT, this.clock.now(), false);
    const stored = await this.repository.finishMany(lost.map((jid) => ({ clientId, jid, outcome })));
    lost.forEach((jid, i) => {
      if (stored[i]) this.events?.publish('jobFinished', { jid, status: 'unknown' });
    });
  }

  /**
   * A cluster node went silent (killed, or cut off) while holding these clients: their jobs still waiting for a
   * result are presumed `unknown` with a reason naming the node, rather than left `running` until their deadline.
   * Presumed only: a client that reconnects elsewhere and replays its result replaces it. Resolves with how many.
   */
  async presumeLostWithNode(nodeId: string, clientIds: readonly string[]): Promise<number> {
    const now = this.clock.now();
    const outcome = unknownOutcome(lostWithNode(nodeId), now, true);
    let ended = 0;
    // A node held 10,000 clients or more: a query per client was 10,000 round trips on every surviving node while
    // the lost node's agents reconnected to them.
    for (let at = 0; at < clientIds.length; at += LOST_CLIENTS_PER_QUERY) {
      const some = clientIds.slice(at, at + LOST_CLIENTS_PER_QUERY);
      // Also jobs whose start the lost node had not recorded yet: nobody else will.
      const waiting = await this.repository.awaitingResult(some, now, true);
      if (waiting.length === 0) continue;
      const stored = await this.repository.finishMany(
        waiting.map(({ clientId, jid }) => ({ clientId, jid, outcome })),
      );
      waiting.forEach(({ jid }, i) => {
        if (stored[i]) this.events?.publish('jobFinished', { jid, status: 'unknown' });
      });
      ended += stored.filter(Boolean).length;
    }
    return ended;
  }

  /**
   * Presumes `unknown` these running jobs whose start was never recorded (the node that sent them stopped before
   * their agents' answers came back): each may have started or not, and a result its client still sends replaces
   * the presumption. Resolves with how many were ended.
   */
  async presumeUnconfirmed(jobs: readonly OverdueJob[], reason: string): Promise<number> {
    if (jobs.length === 0) return 0;
    const outcome = unknownOutcome(reason, this.clock.now(), true);
    const stored = await this.repository.finishMany(
      jobs.map(({ jid, clientId }) => ({ clientId, jid, outcome })),
    );
    jobs.forEach(({ jid }, i) => {
      if (stored[i]) this.events?.publish('jobFinished', { jid, status: 'unknown' });
    });
    return stored.filter(Boolean).length;
  }

  /**
   * Presumes `unknown` every running job whose result is overdue (RESULT_GRACE_MS past its timeout), in
   * batches; resolves with how many. The presumption is not final: the agent's own result, replayed when it
   * reconnects, replaces it; a hello that does not list the job makes it final.
   */
  async expireOverdue(batch = 256): Promise<number> {
    let ended = 0;
    for (;;) {
      const now = this.clock.now();
      const overdue = await this.repository.overdue(now, batch);
      if (overdue.length === 0) return ended;
      const outcome = unknownOutcome(RESULT_OVERDUE, now, true);
      const stored = await this.repository.finishMany(
        overdue.map(({ jid, clientId }) => ({ clientId, jid, outcome })),
      );
      overdue.forEach(({ jid }, i) => {
        if (stored[i]) this.events?.publish('jobFinished', { jid, status: 'unknown' });
      });
      ended += stored.filter(Boolean).length;
      if (overdue.length < batch) return ended;
    }
  }

  /**
   * Asks the agent to start a job already stored as `running` and records what it said. When the agent does
   * not start it the job is stored as `failed` with the reason, which is also returned. `answered` is called as
   * soon as the agent has answered (or cannot), before anything is written.
   */
  dispatchStored(
    job: Pick<Job, 'client_id' | 'jid'>,
    run: JobRun,
    answered?: () => void,
  ): Promise<DispatchError | undefined> {
    return this.recordReply(job, () => this.dispatch.runJob(job.client_id, run), answered);
  }

  /** Whether the dispatch sends the jobs of one step together (a cluster: one request per node). */
  get dispatchesBatches(): boolean {
    return this.dispatch.runJobs !== undefined;
  }

  /**
   * dispatchStored for many jobs of one run at once, sent together when the dispatch can (runJobs): one promise
   * per job, in order, each settling once that job's answer is recorded; `answered` is called once per job.
   */
  dispatchStoredMany(
    jobs: readonly Pick<Job, 'client_id' | 'jid'>[],
    run: Omit<JobRun, 'jid'>,
    answered?: () => void,
  ): Promise<DispatchError | undefined>[] {
    const replies = this.dispatch.runJobs?.(
      run,
      jobs.map((job) => ({ clientId: job.client_id, jid: job.jid })),
    );
    return jobs.map((job, i) =>
      this.recordReply(
        job,
        () => replies?.[i] ?? this.dispatch.runJob(job.client_id, { ...run, jid: job.jid }),
        answered,
      ),
    );
  }

  /** Waits for the agent's answer to a job.run and records it: the start, or the job `failed` with the reason. */
  private async recordReply(
    job: Pick<Job, 'client_id' | 'jid'>,
    reply: () => Promise<JobRunReply>,
    answered: (() => void) | undefined,
  ): Promise<DispatchError | undefined> {
    let started: JobRunReply;
    try {
      started = await reply();
    } catch (err) {
      answered?.();
      if (!(err instanceof DispatchError)) throw err;
      await this.writes.submit({
        finish: {
          clientId: job.client_id,
          jid: job.jid,
          outcome: failedOutcome(DISPATCH_FAILURE_PREFIX[err.reason] + err.message, this.clock.now()),
        },
      });
      this.events?.publish('jobFinished', { jid: job.jid, status: 'failed' });
      return err;
    }
    answered?.();
    await this.writes.submit({ start: { jid: job.jid, started } });
    return undefined;
  }

  /**
   * Stores the job (running), asks the agent to start it and records what the agent said. An agent that refuses
   * or cannot start it leaves a `failed` job with the reason; the caller gets the jid either way.
   */
  private async start(
    clientId: string,
    createdBy: string,
    run: Omit<JobRun, 'jid'>,
    shownCommand: string,
    queueTtlSec: number | undefined,
  ): Promise<JobCreated> {
    const client = this.clients.describe(clientId);
    if (!client) throw jobErrors.clientNotFound(clientId);
    const now = this.clock.now();
    const origin = { clientId, clientName: client.name, createdBy, shownCommand };
    if (!client.connected) {
      if (queueTtlSec === undefined) throw jobErrors.clientNotConnected(clientId);
      const job = queuedJob(newJob(randomUUID(), origin, run, now), run, queueTtlSec, now);
      await this.repository.insert(job);
      this.queue.queued(clientId, job, () => this.clients.describe(clientId)?.connected === true);
      return { jid: job.jid };
    }
    this.dispatch.ensureReachable?.(clientId);
    const job = newJob(randomUUID(), origin, run, now);
    await this.repository.insert(job);
    await this.dispatchStored(job, { ...run, jid: job.jid });
    return { jid: job.jid };
  }
}

const options = (body: CommandBody | ScriptBody) => ({
  interpreter: body.interpreter,
  cwd: body.cwd,
  is_sudo: body.is_sudo,
  timeout_sec: body.timeout_sec,
  ...(body.timeout_kill ? { timeout_kill: true } : {}),
});

export const CANCELLED_QUEUED = 'cancelled before it was delivered to the client';
export const expiredReason = (clientId: string) =>
  `expired: client '${clientId}' did not connect within queue_ttl; the job was never sent`;

/** The job `queued` until its client connects, at most queueTtlSec from now; it keeps its script to send. */
export function queuedJob(job: Job, run: Omit<JobRun, 'jid'>, queueTtlSec: number, now: Date): StoredJob {
  return {
    ...job,
    status: 'queued',
    queue_expires_at: new Date(now.getTime() + queueTtlSec * 1000).toISOString(),
    ...(run.script === undefined ? {} : { queuedScript: run.script }),
  };
}

export interface JobOrigin {
  clientId: string;
  clientName: string;
  createdBy: string;
  shownCommand: string;
}

/** Why svcd ended a job `unknown` on its own. */
export const LOST_ON_RECONNECT =
  'no result: the client reconnected without this job (its agent was restarted or dropped the result)';
export const lostWithNode = (nodeId: string) =>
  `no result: svcd node '${nodeId}', which held the client, stopped renewing its cluster presence (killed or cut off) while the job ran (presumed unknown; a result the client still sends replaces this)`;
export const RESULT_OVERDUE = `no result from the client within timeout_sec plus ${RESULT_GRACE_MS / 1000} s (svcd presumes it unknown; a result the client still sends replaces this)`;

function unknownOutcome(error: string, now: Date, presumed: boolean): JobOutcome {
  return { ...failedOutcome(error, now), status: 'unknown', presumed };
}

/** The outcome of a job that never ran. */
export function failedOutcome(error: string, now: Date): JobOutcome {
  return {
    status: 'failed',
    exit_code: null,
    finished_at: now.toISOString(),
    error,
    stdout: '',
    stderr: '',
    stdout_truncated: false,
    stderr_truncated: false,
  };
}

export function newJob(jid: string, origin: JobOrigin, run: Omit<JobRun, 'jid'>, now: Date): Job {
  return {
    jid,
    status: 'running',
    started_at: null,
    finished_at: null,
    client_id: origin.clientId,
    client_name: origin.clientName,
    command: origin.shownCommand,
    cwd: run.cwd,
    is_sudo: run.is_sudo,
    is_script: run.script !== undefined,
    interpreter: run.interpreter,
    pid: null,
    created_by: origin.createdBy,
    created_at: now.toISOString(),
    timeout_sec: run.timeout_sec,
    ...(run.timeout_kill ? { timeout_kill: true } : {}),
    exit_code: null,
    error: '',
    result: { stdout: '', stderr: '', stdout_truncated: false, stderr_truncated: false },
  };
}
