import type { Duplex } from 'node:stream';
import { ControlError, ControlPeer, type LineLogger as Logger } from '@svc/platform';
import {
  CONTROL_ERRORS,
  type Hello,
  type HelloReply,
  type JobResult,
  type JobRun,
  type JobRunReply,
  type SystemFacts,
} from '@svc/protocol';
import { checkPort } from '../tunnels/check-port.js';
import type { TunnelForwarder } from '../tunnels/forwarder.js';
import type { TunnelAllowList } from '../tunnels/tunnel-allowed.js';

export interface SessionOptions {
  /** The hello message without facts, which are collected when it is sent. */
  identity: Omit<Hello, 'facts'>;
  collectFacts: () => Promise<SystemFacts>;
  allowList: TunnelAllowList;
  /** Runs svcd's jobs; without it, job.run is answered `failed`. `held` lists them for hello. */
  jobs?: {
    run(job: JobRun): Promise<JobRunReply>;
    held(): string[] | undefined;
    cancel(jid: string): boolean;
  };
  /** Relays svcd's tunnel connections; without one, tunnel.open is refused. */
  forwarder?: TunnelForwarder;
  logger: Pick<Logger, 'debug' | 'info' | 'warn'>;
  /** How often facts are re-read; a change is sent as facts.update. */
  factsIntervalMs?: number;
  helloTimeoutMs?: number;
}

/**
 * The agent's side of the control channel: says hello, answers svcd's requests, pings svcd and re-sends the
 * facts when they change. `ended` resolves with a reason when the channel closes or svcd stops answering.
 */
export class ControlSession {
  private readonly peer: ControlPeer;
  private readonly timers = new Set<NodeJS.Timeout>();
  private lastFacts = '';
  private stopped = false;
  private reconnectReason: string | undefined;
  private markEnded: (reason: string) => void = () => undefined;
  readonly ended = new Promise<string>((resolve) => (this.markEnded = resolve));

  constructor(
    stream: Duplex,
    private readonly options: SessionOptions,
  ) {
    this.peer = new ControlPeer(stream, {
      side: 'agent',
      onProtocolError: (problem) => this.end(`svcd broke the control protocol: ${problem}`),
    });
    // svcd ending its side (EOF) means the same as closing the channel.
    stream.once('end', () => this.end('the control channel closed'));
    stream.once('close', () => this.end('the control channel closed'));
    const { allowList, logger } = options;
    this.peer
      .on('ping', () => ({}))
      .on('reconnect', ({ reason }) => {
        this.reconnectReason = reason;
        this.end(`svcd asked this agent to reconnect: ${reason}`);
      })
      .on('tunnel.allowed', async ({ host, port }) => {
        const allowed = await allowList.allows(host, port);
        logger.debug({ host, port, allowed }, 'tunnel target checked against tunnel_allowed');
        return { allowed };
      })
      .on('tunnel.check_port', async ({ host, port, timeout_ms }) => {
        if (!(await allowList.allows(host, port)))
          return { open: false, error: `${host}:${port} is not allowed by tunnel_allowed` };
        return checkPort(host, port, timeout_ms);
      })
      .on('tunnel.open', async ({ host, port }) => {
        if (!options.forwarder)
          throw new ControlError(CONTROL_ERRORS.failed, 'this agent cannot relay tunnels');
        await options.forwarder.open(host, port);
        return {};
      })
      .on('tunnel.close', async ({ host, port }) => {
        await options.forwarder?.close(host, port);
        return {};
      })
      .on('job.run', (job) => {
        if (!options.jobs) throw new ControlError(CONTROL_ERRORS.failed, 'this agent cannot run jobs');
        return options.jobs.run(job);
      })
      .on('job.cancel', ({ jid }) => {
        if (!options.jobs) throw new ControlError(CONTROL_ERRORS.failed, 'this agent cannot run jobs');
        return { running: options.jobs.cancel(jid) };
      });
  }

  /** svcd's reason when it asked this agent to reconnect at once (a draining node); undefined otherwise. */
  get askedToReconnect(): string | undefined {
    return this.reconnectReason;
  }

  /** Sends hello with fresh facts; rejects with a ControlError when svcd refuses (e.g. already_connected). */
  async hello(): Promise<HelloReply> {
    const facts = await this.options.collectFacts();
    this.lastFacts = JSON.stringify(facts);
    const jobs = this.options.jobs?.held();
    return this.peer.request(
      'hello',
      { ...this.options.identity, facts, ...(jobs ? { jobs } : {}) },
      this.options.helloTimeoutMs,
    );
  }

  /** Sends a finished job's result in one `job.result` request; resolves when svcd has stored it. */
  sendResult(result: JobResult): Promise<unknown> {
    return this.peer.request('job.result', result);
  }

  /** Starts pinging svcd every `keepaliveMs` (no reply within that time ends the session) and watching facts. */
  start(keepaliveMs: number): void {
    this.every(keepaliveMs, async () => {
      try {
        await this.peer.request('ping', {}, keepaliveMs);
      } catch (err) {
        // An error reply still proves svcd is alive; only silence or a closed channel ends the session.
        if (!(err instanceof ControlError)) this.end(`svcd did not answer a ping within ${keepaliveMs} ms`);
      }
    });
    this.every(this.options.factsIntervalMs ?? 5 * 60_000, () => this.sendFactsIfChanged());
  }

  /** Stops the timers and closes the channel. */
  stop(): void {
    this.end('stopped');
  }

  private async sendFactsIfChanged(): Promise<void> {
    let facts: SystemFacts;
    try {
      facts = await this.options.collectFacts();
    } catch (err) {
      this.options.logger.warn({ err }, 'could not read the system facts');
      return;
    }
    const text = JSON.stringify(facts);
    if (text === this.lastFacts || this.stopped) return;
    this.lastFacts = text;
    const { tags, labels } = this.options.identity;
    this.peer.notify('facts.update', { tags, labels, facts });
    this.options.logger.info('system facts changed; sent them to svcd');
  }

  /** Runs `task` every `ms`, never overlapping with itself. */
  private every(ms: number, task: () => Promise<void>): void {
    const schedule = () => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        void task().finally(() => {
          if (!this.stopped) schedule();
        });
      }, ms);
      this.timers.add(timer);
    };
    schedule();
  }

  private end(reason: string): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.peer.close();
    this.markEnded(reason);
  }
}
