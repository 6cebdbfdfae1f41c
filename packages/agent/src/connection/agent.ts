import { randomUUID } from 'node:crypto';
import { Backoff, ControlError, formatDuration, type LineLogger as Logger } from '@svc/platform';
import { CONTROL_ERRORS, JOB_ENV_CAPABILITY, type SystemFacts } from '@svc/protocol';
import type { Credentials } from '../config/auth.js';
import type { ExecSettings } from '../exec/exec-settings.js';
import { JobExecutor } from '../exec/job-executor.js';
import type { JobEnvironment } from '../exec/job-start.js';
import { jobProcessEnv, machineInterpreterHost, pathLookup, rememberedLookup } from '../exec/machine.js';
import type { ResultStoreLimits } from '../exec/result-store.js';
import { collectFacts } from '../sysinfo/facts.js';
import { Forwarder } from '../tunnels/forwarder.js';
import { TunnelAllowList } from '../tunnels/tunnel-allowed.js';
import { SVC_VERSION } from '../version.js';
import { AgentMemory } from './agent-memory.js';
import { ControlSession } from './control-session.js';
import { LinkError, type LinkFailure } from './link-error.js';
import { openLink, type Link, type LinkOptions } from './ssh-link.js';

export interface AgentOptions {
  serverUrl: string;
  credentials: Credentials;
  clientId: string;
  name: string;
  tags: string[];
  labels: Record<string, string>;
  fingerprint: string | undefined;
  /** `--tls-ca` / `[client] tls_ca`, read; undefined = the system's CAs. */
  tlsCa?: LinkOptions['tlsCa'];
  tunnelAllowed: string[];
  keepaliveIntervalMs: number;
  maxRetryIntervalMs: number;
  /** Absolute; job scripts are written to `<dataDir>/scripts`. */
  dataDir: string;
  exec: ExecSettings;
}

/** Replaceable parts, for tests. */
export interface AgentDeps {
  logger: Logger;
  collectFacts?: () => Promise<SystemFacts>;
  backoff?: Backoff;
  openLink?: (options: LinkOptions) => Promise<Link>;
  factsIntervalMs?: number;
  handshakeTimeoutMs?: number;
  /** Overrides of where jobs run (PATH lookups, environment). */
  jobEnvironment?: Partial<JobEnvironment>;
  resultLimits?: ResultStoreLimits;
  /** How long a new job may take to end and still have its result sent in one request (INLINE_WAIT_MS). */
  inlineWaitMs?: number;
}

/** `638ms`, `6s`, `4m12s`: retry delays to the second once they pass one second. */
const shortDuration = (ms: number) => (ms < 1000 ? `${ms}ms` : formatDuration(Math.round(ms / 1000) * 1000));

type Attempt =
  | { connected: true; reconnectNow?: string }
  | { connected: false; kind: LinkFailure | 'refused'; message: string; retryAfterMs?: number | undefined };

/**
 * Keeps one link to svcd: connects, says hello, and after any failure or disconnect tries again with
 * exponential backoff (reset after each accepted hello) until stop() is called.
 */
export class Agent {
  /** Random per process, so svcd can tell this agent reconnecting from another one using the same id. */
  readonly sessionId = randomUUID();
  private readonly abort = new AbortController();
  private readonly backoff: Backoff;
  private readonly allowList: TunnelAllowList;
  private readonly jobs: JobExecutor;
  private readonly memory: AgentMemory;
  private readonly log: Logger;
  private current: { link: Link; session?: ControlSession } | undefined;
  private warnedFingerprint: string | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly options: AgentOptions,
    private readonly deps: AgentDeps,
  ) {
    this.backoff = deps.backoff ?? new Backoff({ baseMs: 1000, maxMs: options.maxRetryIntervalMs });
    this.allowList = new TunnelAllowList(options.tunnelAllowed);
    this.log = deps.logger;
    this.memory = new AgentMemory(this.log);
    const findProgram = rememberedLookup(pathLookup(process.env.PATH));
    this.jobs = new JobExecutor({
      environment: {
        settings: options.exec,
        dataDir: options.dataDir,
        cwd: process.cwd(),
        host: machineInterpreterHost(options.exec.interpreterAliases),
        findSudo: () => findProgram('sudo'),
        env: jobProcessEnv(),
        onCleanupError: (path, err) =>
          this.log.warn({ path, err }, 'could not delete a script file after its run'),
        ...deps.jobEnvironment,
      },
      logger: this.log,
      jobEnded: this.memory.jobEnded,
      ...(deps.resultLimits ? { limits: deps.resultLimits } : {}),
      ...(deps.inlineWaitMs === undefined ? {} : { inlineWaitMs: deps.inlineWaitMs }),
    });
  }

  /** Job results svcd has not acknowledged yet. */
  get pendingResults(): number {
    return this.jobs.pendingResults;
  }

  /** Connects and stays connected until stop(); resolves once stopped. */
  run(): Promise<void> {
    this.running ??= this.loop();
    return this.running;
  }

  /** Closes the link and ends run(). */
  async stop(): Promise<void> {
    this.abort.abort();
    this.memory.stop();
    const current = this.current;
    if (current) {
      current.session?.stop();
      current.link.close();
      await Promise.race([current.link.closed, new Promise((r) => setTimeout(r, 3000).unref())]);
    }
    await this.running;
  }

  private get stopping(): boolean {
    return this.abort.signal.aborted;
  }

  private async loop(): Promise<void> {
    const server = this.options.serverUrl;
    while (!this.stopping) {
      const attempt = await this.connectOnce();
      if (this.stopping) break;
      if (attempt.connected && attempt.reconnectNow !== undefined) {
        // A draining node: the load balancer hands the next connection to another node, so no wait.
        this.log.info({ server, reason: attempt.reconnectNow }, 'svcd asked to reconnect; reconnecting now');
        continue;
      }
      // A wrong fingerprint will not fix itself; retry rarely instead of hammering svcd.
      const wrongKey = !attempt.connected && attempt.kind === 'fingerprint';
      // A busy svcd says when it expects room (503 with Retry-After): come back then, without growing the backoff.
      const told = attempt.connected ? undefined : attempt.retryAfterMs;
      const cap = wrongKey ? this.backoff.maxMs : (told ?? this.backoff.currentCapMs);
      const delay = wrongKey
        ? this.backoff.maxMs
        : told === undefined
          ? this.backoff.next()
          : this.backoff.retryAfter(told);
      const retry = `retrying in ${shortDuration(delay)}`;
      // The cap (the upper bound the jittered delay was drawn under) shows the backoff growing.
      const fields = { server, retry_in_ms: delay, retry_cap_ms: cap };
      if (attempt.connected) this.log.info(fields, `reconnecting in ${shortDuration(delay)}`);
      else if (attempt.kind === 'unreachable' || attempt.kind === 'protocol')
        this.log.warn(fields, `cannot connect to svcd: ${attempt.message}; ${retry}`);
      else this.log.error(fields, `${attempt.message}; ${retry}`);
      await this.backoff.sleep(delay, this.abort.signal);
    }
  }

  private async connectOnce(): Promise<Attempt> {
    const { serverUrl, credentials, fingerprint, tlsCa } = this.options;
    let link: Link;
    try {
      link = await (this.deps.openLink ?? openLink)({
        url: serverUrl,
        credentials,
        fingerprint,
        tlsCa,
        signal: this.abort.signal,
        onWaiting: (ahead) =>
          this.log.info(
            { server: serverUrl, ahead },
            `svcd is busy with other agents' handshakes and keeps this one waiting for its turn${ahead === undefined ? '' : ` (about ${ahead} before it)`}`,
          ),
        ...(this.deps.handshakeTimeoutMs ? { handshakeTimeoutMs: this.deps.handshakeTimeoutMs } : {}),
      });
    } catch (err) {
      const error = err instanceof LinkError ? err : new LinkError('unreachable', String(err));
      return { connected: false, kind: error.kind, message: error.message, retryAfterMs: error.retryAfterMs };
    }
    this.current = { link };
    try {
      return await this.converse(link);
    } finally {
      this.current = undefined;
      link.close();
    }
  }

  /** Runs the control session on an open link until it ends. */
  private async converse(link: Link): Promise<Attempt> {
    const { serverUrl: server, clientId, fingerprint } = this.options;
    if (fingerprint === undefined && this.warnedFingerprint !== link.fingerprint) {
      this.warnedFingerprint = link.fingerprint;
      this.log.warn(
        { server, fingerprint: link.fingerprint },
        `svcd's fingerprint is not checked; pin it with --fingerprint ${link.fingerprint}`,
      );
    }
    const session = this.newSession(link);
    if (this.current) this.current.session = session;
    let keepaliveMs: number;
    try {
      const reply = await session.hello();
      keepaliveMs = Math.min(this.options.keepaliveIntervalMs, reply.keepalive_interval_ms);
    } catch (err) {
      session.stop();
      if (err instanceof ControlError && err.code === CONTROL_ERRORS.alreadyConnected)
        return { connected: false, kind: 'refused', message: this.idInUse(err.message) };
      const message = err instanceof Error ? err.message : String(err);
      return { connected: false, kind: 'protocol', message: `svcd did not accept hello: ${message}` };
    }
    this.backoff.reset();
    this.log.info({ server, fingerprint: link.fingerprint, client_id: clientId }, 'connected to svcd');
    session.start(keepaliveMs);
    this.jobs.attach(link.ssh, (result) => session.sendResult(result));
    const reason = await Promise.race([session.ended, link.closed]);
    this.jobs.detach();
    session.stop();
    if (this.stopping) return { connected: true };
    const asked = session.askedToReconnect;
    if (asked !== undefined) {
      link.close();
      return { connected: true, reconnectNow: asked };
    }
    // svcd went silent or dropped us: cut the socket instead of waiting for a polite close that may not come.
    link.destroy();
    this.log.warn({ server, reason }, `disconnected from svcd: ${reason}`);
    return { connected: true };
  }

  /**
   * svcd holds this client id for another connection. It cannot tell a second agent from this agent's own earlier
   * connection that it has not yet noticed is dead (after a crash or kill -9, until its keepalive times out), so
   * the agent keeps retrying with its backoff rather than exiting, and says what to change if it is the former.
   */
  private idInUse(reason: string): string {
    const { clientId, dataDir } = this.options;
    return (
      `svcd refused client id "${clientId}": another agent with this id is connected (svcd: ${reason}). ` +
      `A second svc on one host needs its own --data-dir (this one uses ${dataDir}, where a generated id is kept) ` +
      `or its own --id; if this agent has just restarted, svcd frees the id once it notices the old connection is gone`
    );
  }

  private newSession(link: Link): ControlSession {
    const { clientId, name, tags, labels } = this.options;
    return new ControlSession(link.control, {
      identity: {
        client_id: clientId,
        name,
        session_id: this.sessionId,
        version: SVC_VERSION,
        tags,
        labels,
        capabilities: [JOB_ENV_CAPABILITY],
      },
      collectFacts: this.deps.collectFacts ?? collectFacts,
      allowList: this.allowList,
      jobs: this.jobs,
      forwarder: new Forwarder(link.ssh, this.allowList, this.log, this.memory.relayed),
      logger: this.log,
      ...(this.deps.factsIntervalMs ? { factsIntervalMs: this.deps.factsIntervalMs } : {}),
    });
  }
}
