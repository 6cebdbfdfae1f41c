import type { ServerChannel } from 'ssh2';
import {
  CONTROL_ERRORS,
  JOB_ENV_CAPABILITY,
  type JobResult,
  type JobRun,
  type JobRunReply,
} from '@svc/protocol';
import { ControlError, StreamRedactor, type ControlPeer, type Logger } from '@svc/platform';
import { DispatchError, type JobAgent, type JobResultSink } from '../core/jobs/ports.js';
import type { JobOutputListener } from '../core/jobs/job-watch.js';
import { readJobOutput } from './job-output-channel.js';
import type { JobRedactions } from './job-redactions.js';

/** How long the agent may take to start a process and answer job.run. */
const JOB_RUN_TIMEOUT_MS = 30_000;
/** Output channels one agent may have open at once (one per running job). */
export const MAX_OUTPUT_CHANNELS = 256;

const FAILURE_BY_CODE: Record<string, DispatchError['reason']> = {
  [CONTROL_ERRORS.disabled]: 'disabled',
  [CONTROL_ERRORS.refused]: 'refused',
};

/** The jobs of one agent connection: job.run requests, and the output channels the agent opens for results. */
export class AgentJobs implements JobAgent {
  private openChannels = 0;
  /** While a hello's job list is being settled, every job sent on this connection is added to it. */
  private sentLog: Set<string> | undefined;

  constructor(
    private readonly peer: () => ControlPeer | undefined,
    private readonly clientId: () => string | undefined,
    private readonly sink: JobResultSink | undefined,
    private readonly log: Logger,
    private readonly output?: JobOutputListener,
    /** What the agent's hello listed in `capabilities`. */
    private readonly capabilities: () => readonly string[] = () => [],
    private readonly redactions?: JobRedactions,
  ) {}

  async run(job: JobRun): Promise<JobRunReply> {
    const peer = this.peer();
    if (!peer) throw new DispatchError('offline', 'the client is not connected');
    // An agent that does not know `env` would run the job without its variables: refuse instead.
    if (job.env && !this.capabilities().includes(JOB_ENV_CAPABILITY))
      throw new DispatchError(
        'unsupported',
        "the client's agent is too old to pass environment variables (env) to a job (update svc on the client)",
      );
    this.redactions?.remember(job);
    this.sentLog?.add(job.jid);
    try {
      return await peer.request('job.run', job, JOB_RUN_TIMEOUT_MS);
    } catch (err) {
      if (err instanceof ControlError)
        throw new DispatchError(FAILURE_BY_CODE[err.code] ?? 'failed', err.message);
      const message = (err as Error).message;
      if (message === 'control channel closed')
        throw new DispatchError('offline', 'the client disconnected before it answered');
      throw new DispatchError('failed', `${message}; the client may have started it`);
    }
  }

  async cancel(jid: string): Promise<boolean> {
    const peer = this.peer();
    if (!peer) throw new DispatchError('offline', 'the client is not connected');
    try {
      return (await peer.request('job.cancel', { jid }, JOB_RUN_TIMEOUT_MS)).running;
    } catch (err) {
      if (err instanceof ControlError && err.code === CONTROL_ERRORS.unknownType)
        throw new DispatchError(
          'unsupported',
          "the client's agent is too old to cancel jobs (update svc on the client); the job keeps running",
        );
      if (err instanceof ControlError) throw new DispatchError('failed', err.message);
      const message = (err as Error).message;
      if (message === 'control channel closed')
        throw new DispatchError('offline', 'the client disconnected before it answered');
      throw new DispatchError('failed', message);
    }
  }

  /** Adds the id of every job sent from now on to `log`, until called with undefined. */
  logSent(log: Set<string> | undefined): void {
    this.sentLog = log;
  }

  /** Whether another output channel may open now. */
  get acceptsOutput(): boolean {
    return (
      this.sink !== undefined && this.clientId() !== undefined && this.openChannels < MAX_OUTPUT_CHANNELS
    );
  }

  /**
   * Stores a whole result the agent sent in a `job.result` request on this connection's control channel; the
   * reply is the ACK. A failed write is an error reply, so the agent offers the result again later.
   */
  async storeResult(clientId: string, result: JobResult): Promise<Record<string, never>> {
    if (!this.sink) throw new ControlError(CONTROL_ERRORS.failed, 'svcd does not store job results here');
    const { jid, end } = result;
    const stdout = this.redacted(jid, Buffer.from(result.stdout, 'base64'));
    const stderr = this.redacted(jid, Buffer.from(result.stderr, 'base64'));
    if (this.output?.wants(jid)) {
      if (stdout.length > 0) this.output.chunk(clientId, jid, 'stdout', stdout.toString('utf8'));
      if (stderr.length > 0) this.output.chunk(clientId, jid, 'stderr', stderr.toString('utf8'));
    }
    let stored: boolean;
    try {
      stored = await this.sink.store(clientId, jid, {
        end,
        stdout,
        stderr,
        stdoutCapped: false,
        stderrCapped: false,
      });
    } catch (err) {
      this.log.warn(
        { err, client_id: clientId, jid },
        'storing a job result failed; the agent will offer it again',
      );
      throw new ControlError(CONTROL_ERRORS.failed, 'the result could not be stored; offer it again later');
    }
    if (!stored) this.log.debug({ client_id: clientId, jid }, 'job result not stored: no such running job');
    this.redactions?.forget(jid);
    // Acknowledged either way: a result svcd will never store should not be offered again.
    return {};
  }

  private redacted(jid: string, data: Buffer): Buffer {
    const secrets = this.redactions?.secretsOf(jid) ?? [];
    if (secrets.length === 0 || data.length === 0) return data;
    const redactor = new StreamRedactor(secrets);
    return Buffer.concat([redactor.push(data), redactor.end()]);
  }

  /** Reads a result from a channel the agent opened with the job output subsystem. */
  readOutput(channel: ServerChannel): void {
    const clientId = this.clientId();
    if (!this.sink || clientId === undefined) return void channel.close();
    this.openChannels += 1;
    channel.once('close', () => (this.openChannels -= 1));
    readJobOutput(channel, clientId, this.sink, this.log, this.output, this.redactions);
  }
}
