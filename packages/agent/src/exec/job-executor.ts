import type { Client } from 'ssh2';
import type { LineLogger as Logger } from '@svc/platform';
import type { JobRun, JobRunReply } from '@svc/protocol';
import { jobErrors } from './job-errors.js';
import type { JobOutput } from './job-output.js';
import { startJob, type JobEnvironment } from './job-start.js';
import { sendJobOutput } from './output-sender.js';
import { DEFAULT_RESULT_LIMITS, ResultStore, type ResultStoreLimits } from './result-store.js';

export interface JobExecutorOptions {
  environment: JobEnvironment;
  logger: Pick<Logger, 'info' | 'warn' | 'debug'>;
  limits?: ResultStoreLimits;
}

/** The link results are sent on, and the jobs whose results are being sent on it. */
interface Attached {
  ssh: Client;
  sending: Set<string>;
}

/**
 * Runs svcd's jobs and gets their results to svcd: each result streams on its own output channel of the current
 * link while the job runs, and is kept until svcd acknowledges it. Results not acknowledged when a link ends are
 * sent again (`replay: true`) once the next link is up, also after an svcd restart.
 */
export class JobExecutor {
  private readonly store: ResultStore;
  private attached: Attached | undefined;

  constructor(private readonly options: JobExecutorOptions) {
    this.store = new ResultStore(options.limits ?? DEFAULT_RESULT_LIMITS, (output, reason) =>
      options.logger.warn(
        { jid: output.jid },
        `dropped the result of job ${output.jid} before svcd stored it: ${reason}`,
      ),
    );
  }

  /** Results not yet acknowledged by svcd. */
  get pendingResults(): number {
    return this.store.size;
  }

  /** Answers `job.run`: starts the job and replies once its process runs, or throws the job error. */
  async run(job: JobRun): Promise<JobRunReply> {
    const { logger } = this.options;
    if (this.store.has(job.jid)) throw jobErrors.failed(`job ${job.jid} has already been run by this agent`);
    const kind = job.script === undefined ? 'command' : 'script';
    const { output, pid, startedAt } = await startJob(job, this.options.environment).catch((err: unknown) => {
      logger.info({ jid: job.jid, kind, reason: (err as Error).message }, `${kind} not started`);
      throw err;
    });
    logger.info({ jid: job.jid, kind, pid, is_sudo: job.is_sudo }, `${kind} started`);
    this.store.add(output);
    void output.ended.then(({ status, error }) => {
      logger.info({ jid: job.jid, pid, status, error }, `${kind} ended`);
      this.store.enforceLimits();
    });
    this.offer(output);
    return { pid, started_at: startedAt };
  }

  /** A new link is up and svcd accepted the hello: offer it every result it has not stored yet. */
  attach(ssh: Client): void {
    this.attached = { ssh, sending: new Set() };
    for (const output of this.store.all()) this.offer(output);
  }

  /** The link is gone; results wait for the next one. */
  detach(): void {
    this.attached = undefined;
  }

  private offer(output: JobOutput): void {
    const attached = this.attached;
    if (!attached || attached.sending.has(output.jid)) return;
    attached.sending.add(output.jid);
    const replay = output.offers++ > 0;
    void sendJobOutput(attached.ssh, output, replay)
      .catch((err: unknown) => {
        this.options.logger.warn({ jid: output.jid, err }, 'could not send a job result to svcd');
        return 'not stored' as const;
      })
      .then((outcome) => {
        attached.sending.delete(output.jid);
        if (outcome === 'stored') this.store.remove(output.jid);
        this.options.logger.debug({ jid: output.jid, replay, outcome }, 'job result sent to svcd');
      });
  }
}
