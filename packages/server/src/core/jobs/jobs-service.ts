import { randomUUID } from 'node:crypto';
import type { CommandBody, Job, JobCreated, JobRun, JobRunReply, ListQuery, ScriptBody } from '@svc/protocol';
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
import {
  DispatchError,
  RESULT_GRACE_MS,
  type JobClients,
  type JobOutcome,
  type JobRepository,
  type JobResultSink,
  type RawJobResult,
} from './ports.js';

const DISPATCH_FAILURE_PREFIX: Record<DispatchError['reason'], string> = {
  offline: 'not started: ',
  disabled: 'not started: ',
  refused: 'refused by the client: ',
  failed: 'could not start: ',
};

/** Runs commands and scripts on one client and keeps their jobs (spec 4.5, 4.6). */
export class JobsService implements JobResultSink {
  /** Results and starts arriving together (many clients at once) share transactions. */
  private readonly writes: GroupCommit<JobWrite, boolean>;

  constructor(
    private readonly repository: JobRepository,
    private readonly clients: JobClients,
    private readonly dispatch: Pick<AgentDispatch, 'runJob'>,
    private readonly clock: Clock,
    /** Told when a result is stored (`jobFinished`), so runners and live sessions learn that a job ended. */
    private readonly events?: Pick<ClientEvents, 'publish'>,
  ) {
    this.writes = new GroupCommit(
      (items) => writeJobs(repository, items),
      MAX_WRITES_PER_BATCH,
      outputBytes,
      MAX_OUTPUT_BYTES_PER_BATCH,
    );
  }

  runCommand(clientId: string, body: CommandBody, createdBy: string): Promise<JobCreated> {
    return this.start(clientId, createdBy, { ...options(body), command: body.command }, body.command);
  }

  /** The job shows the script's text as its command, as OpenRPort does. */
  runScript(clientId: string, body: ScriptBody, createdBy: string): Promise<JobCreated> {
    const text = Buffer.from(body.script, 'base64').toString('utf8');
    if (text.trim() === '') throw jobErrors.emptyScript();
    return this.start(clientId, createdBy, { ...options(body), command: '', script: body.script }, text);
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
    const waiting = await this.repository.awaitingResult(clientId, at);
    const lost = waiting.filter((jid) => !held.has(jid));
    if (lost.length === 0) return;
    const outcome = unknownOutcome(LOST_ON_RECONNECT, this.clock.now(), false);
    const stored = await this.repository.finishMany(lost.map((jid) => ({ clientId, jid, outcome })));
    lost.forEach((jid, i) => {
      if (stored[i]) this.events?.publish('jobFinished', { jid, status: 'unknown' });
    });
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
  async dispatchStored(job: Job, run: JobRun, answered?: () => void): Promise<DispatchError | undefined> {
    let started: JobRunReply;
    try {
      started = await this.dispatch.runJob(job.client_id, run);
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
  ): Promise<JobCreated> {
    const client = this.clients.describe(clientId);
    if (!client) throw jobErrors.clientNotFound(clientId);
    if (!client.connected) throw jobErrors.clientNotConnected(clientId);
    const job = newJob(
      randomUUID(),
      { clientId, clientName: client.name, createdBy, shownCommand },
      run,
      this.clock.now(),
    );
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
});

export interface JobOrigin {
  clientId: string;
  clientName: string;
  createdBy: string;
  shownCommand: string;
}

/** Why svcd ended a job `unknown` on its own. */
export const LOST_ON_RECONNECT =
  'no result: the client reconnected without this job (its agent was restarted or dropped the result)';
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
    exit_code: null,
    error: '',
    result: { stdout: '', stderr: '', stdout_truncated: false, stderr_truncated: false },
  };
}
