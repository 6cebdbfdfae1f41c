import type { Client } from 'ssh2';
import type { LineLogger as Logger } from '@svc/platform';
import { MAX_HELD_JOBS, type JobRun, type JobRunReply } from '@svc/protocol';
import { jobErrors } from './job-errors.js';
import type { JobOutput } from './job-output.js';
import { startJob, type JobEnvironment } from './job-start.js';
import { offerJobResult, settledForOffer, type ResultLink, type ResultRequest } from './result-request.js';
import { DEFAULT_RESULT_LIMITS, ResultStore, type ResultStoreLimits } from './result-store.js';

export interface JobExecutorOptions {
  environment: JobEnvironment;
  logger: Pick<Logger, 'info' | 'warn' | 'debug'>;
  limits?: ResultStoreLimits;
  /** How long a new job may take to end and still go in one request; INLINE_WAIT_MS unless a test sets it. */
  inlineWaitMs?: number;
  /** Called when a job's process has ended. */
  jobEnded?: () => void;
}

/** The link results are sent on, and the jobs whose results are being sent on it. */
interface Attached extends ResultLink {
  sending: Set<string>;
}

/**
 * Runs svcd's jobs and gets their results to svcd: a job that ends within INLINE_WAIT_MS with little output goes
 * in one `job.result` control request; otherwise its result streams on its own output channel of the current
 * link while the job runs. Either way it is kept until svcd acknowledges it. Results not acknowledged when a link
 * ends are sent again (`replay: true`) once the next link is up, also after an svcd restart.
 */
export class JobExecutor {
  private readonly store: ResultStore;
  private attached: Attached | undefined;
  /** How to stop each job whose process runs, by jid. */
  private readonly running = new Map<string, () => boolean>();

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

  /**
   * The jobs svcd should still count on for hello: running, or ended and not yet acknowledged. undefined when
   * there are too many to list (svcd then waits for their deadlines).
   */
  held(): string[] | undefined {
    return this.store.size > MAX_HELD_JOBS ? undefined : this.store.all().map((output) => output.jid);
  }

  /** Answers `job.run`: starts the job and replies once its process runs, or throws the job error. */
  async run(job: JobRun): Promise<JobRunReply> {
    const { logger } = this.options;
    if (this.store.has(job.jid)) throw jobErrors.failed(`job ${job.jid} has already been run by this agent`);
    const kind = job.script === undefined ? 'command' : 'script';
    const { output, pid, startedAt, cancel } = await startJob(job, this.options.environment).catch(
      (err: unknown) => {
        logger.info({ jid: job.jid, kind, reason: (err as Error).message }, `${kind} not started`);
        throw err;
      },
    );
    logger.info({ jid: job.jid, kind, pid, is_sudo: job.is_sudo }, `${kind} started`);
    this.store.add(output);
    this.running.set(job.jid, cancel);
    void output.ended.then(({ status, error }) => {
      this.running.delete(job.jid);
      logger.info({ jid: job.jid, pid, status, error }, `${kind} ended`);
      this.store.enforceLimits();
      this.options.jobEnded?.();
    });
    this.offer(output);
    return { pid, started_at: startedAt };
  }

  /**
   * Answers `job.cancel`: kills the job's process group (its result then ends `cancelled` with the output so
   * far). false when no process of that job runs here (it ended; its result is on its way or stored).
   */
  cancel(jid: string): boolean {
    const cancel = this.running.get(jid);
    const cancelling = cancel?.() ?? false;
    this.options.logger.info({ jid, cancelling }, cancelling ? 'cancelling job' : 'cancel: job not running');
    return cancelling;
  }

  /**
   * A new link is up and svcd accepted the hello: offer it every result it has not stored yet. `request` sends
   * `job.result` on the link's control channel.
   */
  attach(ssh: Client, request?: ResultRequest): void {
    this.attached = { ssh, request, sending: new Set() };
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
    // A new job that may end at once waits a moment, so that a short job's result goes in one request.
    const ready =
      attached.request && !output.end
        ? settledForOffer(output, this.options.inlineWaitMs)
        : Promise.resolve();
    void ready
      .then(() => offerJobResult(attached, output, replay))
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
