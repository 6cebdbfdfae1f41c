import type { Duplex } from 'node:stream';
import type { AuthContext, Connection, ServerChannel, Session } from 'ssh2';
import {
  CONTROL_ERRORS,
  CONTROL_SUBSYSTEM,
  JOB_OUTPUT_SUBSYSTEM,
  type FactsUpdate,
  type Hello,
  type HelloReply,
} from '@svc/protocol';
import { ControlError, ControlPeer, type Logger } from '@svc/platform';
import { maskAddress } from '../core/clients/address-mask.js';
import type { ClientAuthenticator } from '../core/clients/ports.js';
import type { JobOutputListener } from '../core/jobs/job-watch.js';
import type { JobResultSink } from '../core/jobs/ports.js';
import type { LiveConnection, LiveConnections } from './live-connections.js';
import { AgentJobs } from './agent-jobs.js';
import type { JobRedactions } from './job-redactions.js';
import { AgentTunnels } from './agent-tunnels.js';
import type { RemoteAddress } from './client-listener.js';
import type { RefusalCounts } from './refusal-counts.js';
import type { TunnelTraffic } from './tunnel-traffic.js';

export interface AgentLinkSettings {
  keepaliveIntervalMs: number;
  /** Time from login to an accepted hello. */
  helloTimeoutMs: number;
  serverVersion: string;
}

export interface AgentConnectionDeps {
  /** This node's live connections (which tell the client directory). */
  connections: LiveConnections;
  /** Undefined when no client credentials are configured: every login fails. */
  authenticator: ClientAuthenticator | undefined;
  settings: AgentLinkSettings;
  /** Where job results go; without one, agents cannot send results (output channels are refused). */
  jobResults?: JobResultSink;
  /** Told about job output as it arrives. */
  jobOutput?: JobOutputListener;
  /** The secrets of the jobs this node sent, redacted from their output; one per node. */
  jobRedactions?: JobRedactions;
  /** Counts failed logins and refused hellos. */
  refusals: RefusalCounts;
  /** Counts the bytes through this node's tunnels. */
  tunnelTraffic: TunnelTraffic;
  /** Told each time an agent's hello is accepted. */
  clientConnected?: () => void;
  log: Logger;
}

/** Failed logins on one connection before it is closed. */
const MAX_LOGIN_FAILURES = 3;
/** Session channels an agent may open before its control channel is up (a wrong subsystem may be retried). */
const MAX_SESSIONS = 3;
/** After a polite close, the socket is cut if the agent has not gone by then. */
const CLOSE_GRACE_MS = 2000;

/** How much longer than its keepalive interval an agent may be silent before svcd pings it (5 s, or half of less). */
export const keepaliveSlackMs = (intervalMs: number): number => Math.min(5_000, intervalMs / 2);

/**
 * One agent's SSH connection after its WebSocket was admitted: password login, the control channel, the hello
 * that names the client, keepalive, and leaving the live connections when the link ends.
 */
export class AgentConnection implements LiveConnection {
  private authId: string | undefined;
  private clientId: string | undefined;
  private session = '';
  /** What the agent's hello listed in `capabilities`. */
  private capabilities: readonly string[] = [];
  private peer: ControlPeer | undefined;
  private sessions = 0;
  private loginFailures = 0;
  /** Pending timers; a timer leaves the set when it fires, so a long-lived connection keeps only its keepalive. */
  private readonly timers = new Set<NodeJS.Timeout>();
  private helloTimer: NodeJS.Timeout | undefined;
  /** The control channel, whose traffic shows the agent alive. */
  private control: ServerChannel | undefined;
  private ended = false;
  private closing = false;
  readonly tunnels: AgentTunnels;
  readonly jobs: AgentJobs;

  constructor(
    private readonly ssh: Connection,
    private readonly stream: Duplex,
    private readonly remote: RemoteAddress,
    private readonly deps: AgentConnectionDeps,
    onClosed: (connection: AgentConnection) => void,
  ) {
    this.tunnels = new AgentTunnels(
      ssh,
      () => (this.clientId === undefined ? undefined : this.peer),
      deps.tunnelTraffic,
      deps.log,
    );
    this.jobs = new AgentJobs(
      () => (this.clientId === undefined || this.ended ? undefined : this.peer),
      () => this.clientId,
      deps.jobResults,
      deps.log,
      deps.jobOutput,
      () => this.capabilities,
      deps.jobRedactions,
    );
    ssh.on('authentication', (ctx) => this.authenticate(ctx));
    ssh.on('ready', () => this.loggedIn());
    ssh.on('session', (accept, reject) => this.openSession(accept, reject));
    ssh.on('error', (err) => deps.log.debug({ err, ip: remote.ip }, 'agent connection error'));
    ssh.on('close', () => {
      this.ended = true;
      for (const timer of this.timers) clearTimeout(timer);
      this.peer?.abandon();
      if (this.clientId !== undefined) {
        deps.connections.detach(this.clientId, this);
        deps.log.info({ client_id: this.clientId }, 'client disconnected');
      }
      onClosed(this);
    });
  }

  get sessionId(): string {
    return this.session;
  }

  get id(): string | undefined {
    return this.clientId;
  }

  /** Ends the link politely (SSH disconnect, WebSocket close), cutting it if the agent lingers. */
  close(reason: string, graceMs = CLOSE_GRACE_MS): void {
    if (this.ended || this.closing) return;
    this.closing = true;
    this.deps.log.info({ client_id: this.clientId, reason, grace_ms: graceMs }, 'closing agent connection');
    this.ssh.end();
    this.after(graceMs, () => this.stream.destroy());
  }

  sayGoodbye(): void {
    if (this.ended || this.closing) return;
    this.closing = true;
    this.ssh.end();
  }

  askToReconnect(reason: string): void {
    this.peer?.notify('reconnect', { reason });
  }

  /** Cuts the link at once (dead or misbehaving peer). */
  drop(reason: string): void {
    if (this.ended) return;
    this.deps.log.info({ client_id: this.clientId, ip: this.remote.ip, reason }, 'dropping agent connection');
    this.stream.destroy();
  }

  private after(ms: number, fn: () => void): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    timer.unref();
    this.timers.add(timer);
    return timer;
  }

  private cancel(timer: NodeJS.Timeout | undefined): void {
    if (timer === undefined) return;
    clearTimeout(timer);
    this.timers.delete(timer);
  }

  private authenticate(ctx: AuthContext): void {
    if (ctx.method !== 'password') return ctx.reject(['password']);
    const { authenticator, log, refusals } = this.deps;
    const authId = ctx.username;
    const verdict = authenticator
      ? authenticator.verify(authId, ctx.password, this.remote.ip)
      : Promise.resolve(false);
    verdict
      .catch((err: unknown) => {
        log.error({ err, client_auth_id: authId }, 'checking an agent login failed');
        return false;
      })
      .then((ok) => {
        if (this.ended) return;
        if (ok) {
          this.authId = authId;
          return ctx.accept();
        }
        log.warn(
          {
            client_auth_id: authId,
            ip: this.remote.ip,
            ...(authenticator ? {} : { reason: 'no client credentials configured' }),
          },
          'agent login refused',
        );
        ctx.reject(['password']);
        refusals.add('login_failed');
        if (++this.loginFailures >= MAX_LOGIN_FAILURES) this.drop('too many failed logins');
      })
      .catch((err: unknown) => log.debug({ err }, 'answering an agent login failed'));
  }

  private loggedIn(): void {
    this.helloTimer = this.after(this.deps.settings.helloTimeoutMs, () => {
      if (this.clientId === undefined) {
        this.deps.refusals.add('no_hello');
        this.drop('no hello in time');
      }
    });
  }

  private openSession(accept: () => Session, reject: () => void): void {
    if (this.clientId !== undefined) return this.openJobOutput(accept, reject);
    if (this.peer || ++this.sessions > MAX_SESSIONS) return reject();
    const session = accept();
    session.on('subsystem', (acceptSub, rejectSub, info) => {
      if (info.name !== CONTROL_SUBSYSTEM || this.peer) {
        this.deps.log.warn(
          { client_auth_id: this.authId, ip: this.remote.ip, subsystem: info.name },
          'agent subsystem refused',
        );
        return rejectSub();
      }
      this.startControl(acceptSub());
    });
  }

  /** After hello, sessions carry job results (subsystem JOB_OUTPUT_SUBSYSTEM) and nothing else. */
  private openJobOutput(accept: () => Session, reject: () => void): void {
    if (!this.jobs.acceptsOutput) return reject();
    accept().once('subsystem', (acceptSub, rejectSub, info) => {
      if (info.name !== JOB_OUTPUT_SUBSYSTEM || !this.jobs.acceptsOutput) {
        this.deps.log.warn({ client_id: this.clientId, subsystem: info.name }, 'agent subsystem refused');
        return rejectSub();
      }
      this.jobs.readOutput(acceptSub());
    });
  }

  private startControl(channel: ServerChannel): void {
    this.control = channel;
    const peer = new ControlPeer(channel, {
      side: 'server',
      onProtocolError: (problem) => this.drop(`control protocol error: ${problem}`),
    });
    this.peer = peer;
    peer.on('hello', (hello) => this.hello(hello));
    peer.on('ping', () => {
      this.requireHello();
      return {};
    });
    peer.on('facts.update', (update: FactsUpdate) => {
      this.deps.connections.updateFacts(this.requireHello(), this, update);
    });
    peer.on('job.result', (result) => this.jobs.storeResult(this.requireHello(), result));
    channel.on('close', () => this.drop('control channel closed'));
  }

  private requireHello(): string {
    if (this.clientId === undefined) throw new ControlError(CONTROL_ERRORS.notReady, 'send hello first');
    return this.clientId;
  }

  private hello(hello: Hello): HelloReply {
    if (this.clientId !== undefined) {
      throw new ControlError(CONTROL_ERRORS.failed, 'hello was already accepted on this connection');
    }
    if (this.ended) throw new ControlError(CONTROL_ERRORS.failed, 'the connection is closing');
    const { connections, settings, log } = this.deps;
    this.session = hello.session_id;
    const result = connections.attach(this, hello, {
      clientAuthId: this.authId ?? '',
      address: maskAddress(this.remote.ip, this.remote.port),
    });
    if (!result.ok) {
      log.warn(
        {
          client_id: hello.client_id,
          client_auth_id: this.authId,
          ip: this.remote.ip,
          reason: result.message,
        },
        'agent refused: client id already connected',
      );
      this.deps.refusals.add('already_connected');
      // Let the error reply go out first.
      setImmediate(() => this.close('client id already connected'));
      throw new ControlError(CONTROL_ERRORS.alreadyConnected, result.message);
    }
    this.clientId = hello.client_id;
    this.capabilities = hello.capabilities ?? [];
    this.cancel(this.helloTimer);
    this.helloTimer = undefined;
    log.info(
      { client_id: this.clientId, client_auth_id: this.authId, address: result.record.address },
      'client connected',
    );
    this.deps.clientConnected?.();
    if (hello.jobs) this.settleLostJobs(hello.client_id, hello.jobs);
    this.startKeepalive();
    return { server_version: settings.serverVersion, keepalive_interval_ms: settings.keepaliveIntervalMs };
  }

  /**
   * Jobs this client's agent started before now and no longer has end `unknown`. Jobs sent on this connection
   * meanwhile join the list, so they are never taken for lost.
   */
  private settleLostJobs(clientId: string, held: readonly string[]): void {
    const sink = this.deps.jobResults;
    if (!sink) return;
    const kept = new Set(held);
    this.jobs.logSent(kept);
    sink
      .agentHolds(clientId, kept, new Date())
      .catch((err: unknown) =>
        this.deps.log.warn(
          { err, client_id: clientId },
          'settling the jobs a reconnected agent no longer has failed',
        ),
      )
      .finally(() => this.jobs.logSent(undefined));
  }

  /**
   * The agent pings svcd every interval (svcd's at most: the hello reply tells it), and that shows it alive. So
   * svcd pings only an agent it has not heard from for an interval and a slack: an idle link carries one ping per
   * interval instead of one each way, which halves what 10,000 idle agents cost both ends. No answer within
   * another interval and slack drops the agent: a dead one is let go within 2 intervals + 10 s.
   */
  private startKeepalive(): void {
    const interval = this.deps.settings.keepaliveIntervalMs;
    const quietMs = interval + keepaliveSlackMs(interval);
    const timer = setTimeout(() => this.pingSilentAgent(quietMs), quietMs);
    timer.unref();
    this.timers.add(timer);
    // refresh() re-arms the timer from now, also once it has fired (then the ping's answer re-arms it).
    this.control?.on('data', () => timer.refresh());
  }

  private pingSilentAgent(timeoutMs: number): void {
    const peer = this.peer;
    if (!peer || this.ended) return;
    peer.request('ping', {}, timeoutMs).catch((err: unknown) => {
      if (!(err instanceof ControlError)) this.drop('keepalive timeout');
    });
  }
}
