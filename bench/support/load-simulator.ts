/**
 * Many simulated svc agents in one process. Each one behaves like packages/agent/src/connection/agent.ts: the same
 * link (openLink: WebSocket → SSH password login → control subsystem), hello with a session id that is random per
 * agent and kept across reconnects, pings every min(20 s, server's interval), and after any failure or lost link a
 * retry with the agent's Backoff (full jitter, 1 s .. 5 min, reset after an accepted hello). `job.run` is answered
 * with a built-in no-op that starts no process: reply `{pid: 0, started_at}` at once, then the agent's own
 * result sender delivers an empty successful result as the agent does (a `job.result` request, or with
 * `resultsOnChannel` on its own output channel) and waits for svcd's ACK. Tunnels are allowed to any target and
 * registered with svcd as the agent does (`tcpip-forward`); a connection through one is echoed back by the agent
 * itself instead of being dialled onwards. Asked to `reconnect` (a draining node), it connects again at once, as
 * the agent does. With `localAddresses` agent n connects from address n mod their count (many 127.x addresses:
 * one source address has only the kernel's ephemeral port range, ~28,000 ports).
 */
import { randomUUID } from 'node:crypto';
import { LinkError } from '../../packages/agent/src/connection/link-error.js';
import { openLink, type Link } from '../../packages/agent/src/connection/ssh-link.js';
import { JobOutput } from '../../packages/agent/src/exec/job-output.js';
import { offerJobResult, type ResultLink } from '../../packages/agent/src/exec/result-request.js';
import { SVC_VERSION } from '../../packages/agent/src/version.js';
import { Backoff } from '../../packages/platform/src/backoff.js';
import { ControlError, ControlPeer } from '../../packages/platform/src/control-peer.js';
import type { Hello, JobRun, JobRunReply } from '../../packages/protocol/src/index.js';
import { JOB_ENV_CAPABILITY } from '../../packages/protocol/src/index.js';
import { TEST_FACTS } from '../../test-support/facts.js';
import { simulatedAttributes } from './simulated-attributes.js';

export interface SimulatorOptions {
  /** ws://host:port of svcd's agent listener. */
  url: string;
  authId: string;
  password: string;
  fingerprint: string;
  /** Client ids are `<idPrefix><n>`, n zero-padded. */
  idPrefix: string;
  count: number;
  /** First connection attempts in flight at once (later reconnects are paced by the backoff only). */
  startConcurrency: number;
  /** The agent's defaults: 20 s keepalive, 5 min retry cap, 30 s handshake limit. */
  keepaliveIntervalMs?: number;
  maxRetryIntervalMs?: number;
  handshakeTimeoutMs?: number;
  /** Send results on output channels only, as agents before `job.result` did (default false). */
  resultsOnChannel?: boolean;
  /**
   * Other nodes of a cluster (default none). Once an agent's link to `url` is lost, its next attempts go round
   * these, starting at one picked by the agent's number, so that a killed node's agents spread over the others.
   */
  fallbackUrls?: string[];
  /**
   * Local addresses to connect from (default: the system's choice), agent n from address n mod their count. A
   * socket bound to an address takes one of its ephemeral ports whatever the server: ~28,000 agents per address.
   */
  localAddresses?: string[];
}

export interface SimulatorStats {
  total: number;
  /** Hello accepted and the link still up. */
  connected: number;
  /** Opening a link or waiting for the hello reply. */
  handshaking: number;
  /** Sleeping before the next attempt. */
  backingOff: number;
  /** Not started yet (waiting for a start slot). */
  notStarted: number;
  attempts: number;
  /** Accepted hellos. */
  connects: number;
  /** Connected agents by the URL they are connected to (a cluster node's agent listener). */
  connectedByUrl: Record<string, number>;
  /** Sessions svcd ended with `reconnect` (a draining node); the agent connected again without a backoff. */
  reconnectsAsked: number;
  /** Links lost after an accepted hello. */
  disconnects: number;
  /** Failed attempts by cause. */
  failures: Record<string, number>;
  /** Date.now() of the last accepted hello. */
  lastConnectAt: number;
  /** Most failed attempts in a row of any agent, and the largest backoff delay drawn. */
  maxFailStreak: number;
  maxDelayMs: number;
  /** Date.now() of the last mark() (0 = none), e.g. just before svcd is killed. */
  markAt: number;
  /** Agents connected on a link that was accepted after the mark. */
  connectedSinceMark: number;
  /** Date.now() of the first and the last lost link after the mark (0 = none). */
  firstDropAfterMark: number;
  lastDropAfterMark: number;
  /** `job.run` requests answered (no-op jobs started). */
  jobsRun: number;
  /** Results svcd acknowledged (JOB_OUTPUT_ACK), and results whose channel closed without it. */
  resultsStored: number;
  resultsNotStored: number;
  /** Date.now() when svcd's last ACK of a result came in (0 = none). */
  lastResultAt: number;
  /** Date.now() when the last `job.run` came in (0 = none). */
  lastJobAt: number;
}

/** The outcome of one ping round over every connected link (LoadSimulator.pingRound). */
export interface PingRound {
  /** Pings sent (one per connected link), answered, and failed (error reply, timeout, link lost). */
  sent: number;
  replied: number;
  failed: number;
  /** Date.now() when the last reply came in. */
  finishedAt: number;
}

/** All counters at zero. */
export const emptyStats = (): SimulatorStats => ({
  total: 0,
  connected: 0,
  handshaking: 0,
  backingOff: 0,
  notStarted: 0,
  attempts: 0,
  connects: 0,
  connectedByUrl: {},
  reconnectsAsked: 0,
  disconnects: 0,
  failures: {},
  lastConnectAt: 0,
  maxFailStreak: 0,
  maxDelayMs: 0,
  markAt: 0,
  connectedSinceMark: 0,
  firstDropAfterMark: 0,
  lastDropAfterMark: 0,
  jobsRun: 0,
  resultsStored: 0,
  resultsNotStored: 0,
  lastResultAt: 0,
  lastJobAt: 0,
});

type AgentState = 'notStarted' | 'handshaking' | 'connected' | 'backingOff';

/** Short, countable cause of a failed attempt. */
export function failureCause(message: string): string {
  if (/ECONNREFUSED/.test(message)) return 'connection refused';
  if (/ECONNRESET|socket hang up/.test(message)) return 'connection reset';
  if (/server response: 503/.test(message)) return 'busy (HTTP 503)';
  if (/timed out|timeout|no reply within/i.test(message)) return 'timeout';
  if (/already connected/.test(message)) return 'id already connected';
  if (/closed the connection during the handshake/.test(message)) return 'closed during handshake';
  return message.slice(0, 80);
}

class SimulatedAgent {
  readonly sessionId = randomUUID();
  state: AgentState = 'notStarted';
  failStreak = 0;
  /** Date.now() when the current link's hello was accepted. */
  connectedAt = 0;
  private readonly backoff: Backoff;
  private link: Link | undefined;
  /** The control peer of the current link while the hello is accepted. */
  peer: ControlPeer | undefined;
  private settled: (() => void) | undefined;
  /** Lost links, and failed attempts after one: with fallback URLs, each moves the next attempt on. */
  private moves = 0;
  /** svcd ended the last session with `reconnect`: the next attempt goes at once. */
  private reconnectNow = false;
  /** svcd refused the last attempt and said when to come back (503 with Retry-After), as svc heeds it. */
  private retryAfterMs: number | undefined;
  private readonly stopping = new AbortController();

  constructor(
    readonly clientId: string,
    /** The agent's number in its simulator: where its round over the fallback URLs starts. */
    private readonly index: number,
    private readonly fleet: LoadSimulator,
    private readonly options: Required<SimulatorOptions>,
  ) {
    this.backoff = new Backoff({ baseMs: 1000, maxMs: options.maxRetryIntervalMs });
  }

  /**
   * Runs until stop(); `firstDone` is called once the first attempt has connected or failed. Each agent has a signal
   * of its own: thousands of listeners on one signal cost O(n) each to add and to remove (node's EventTarget), a
   * third of a simulator's CPU when 5,000 agents reconnect at once.
   */
  async run(firstDone: () => void): Promise<void> {
    const { signal } = this.stopping;
    this.settled = firstDone;
    while (!signal.aborted) {
      const failure = await this.connectOnce(signal);
      this.attemptSettled();
      if (signal.aborted) break;
      if (failure === undefined) this.failStreak = 0;
      else this.fleet.failed(this, failure);
      if (failure === undefined || this.moves > 0) this.moveOn();
      if (this.reconnectNow) {
        this.reconnectNow = false;
        continue;
      }
      const told = this.retryAfterMs;
      this.retryAfterMs = undefined;
      const delay = told === undefined ? this.backoff.next() : this.backoff.retryAfter(told);
      this.fleet.delayDrawn(delay);
      this.setState('backingOff');
      await this.backoff.sleep(delay, signal);
    }
  }

  /** The URL of the next attempt: `url` until a link is lost, then the fallbacks in turn. */
  private currentUrl(): string {
    const { url, fallbackUrls } = this.options;
    if (this.moves === 0 || fallbackUrls.length === 0) return url;
    return fallbackUrls[(this.index + this.moves - 1) % fallbackUrls.length] ?? url;
  }

  private moveOn(): void {
    if (this.options.fallbackUrls.length > 0) this.moves += 1;
  }

  /** Cuts the link at once; the agent reconnects as svc does. */
  cutLink(): void {
    this.link?.destroy();
  }

  /** Stops the agent and cuts its link at once (used when the simulator stops). */
  stop(): void {
    this.stopping.abort();
    this.cutLink();
  }

  /** The outcome of an attempt is known (hello accepted or attempt failed): frees its start slot once. */
  private attemptSettled(): void {
    const settled = this.settled;
    this.settled = undefined;
    settled?.();
  }

  private setState(state: AgentState): void {
    this.fleet.moved(this.state, state);
    this.state = state;
  }

  /** One attempt; resolves with the failure message, or undefined after a session that was accepted and ended. */
  private async connectOnce(signal: AbortSignal): Promise<string | undefined> {
    this.setState('handshaking');
    this.fleet.attempted();
    const url = this.currentUrl();
    const { localAddresses } = this.options;
    let link: Link;
    try {
      link = await openLink({
        url,
        credentials: { id: this.options.authId, password: this.options.password },
        fingerprint: this.options.fingerprint,
        handshakeTimeoutMs: this.options.handshakeTimeoutMs,
        signal,
        localAddress:
          localAddresses.length > 0 ? localAddresses[this.index % localAddresses.length] : undefined,
      });
    } catch (err) {
      if (err instanceof LinkError) this.retryAfterMs = err.retryAfterMs;
      return err instanceof Error ? err.message : String(err);
    }
    this.link = link;
    try {
      return await this.converse(link, url);
    } finally {
      this.link = undefined;
      link.close();
    }
  }

  private async converse(link: Link, url: string): Promise<string | undefined> {
    let markEnded: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => (markEnded = resolve));
    const peer = new ControlPeer(link.control, { side: 'agent', onProtocolError: () => markEnded() });
    peer.on('ping', () => ({}));
    peer.on('reconnect', () => {
      this.reconnectNow = true;
      markEnded();
    });
    const results: ResultLink = {
      ssh: link.ssh,
      request: this.options.resultsOnChannel ? undefined : (result) => peer.request('job.result', result),
    };
    peer.on('job.run', (job) => this.runNoop(results, job));
    serveEchoTunnels(peer, link);
    link.control.once('end', () => markEnded());
    link.control.once('close', () => markEnded());
    const hello: Hello = {
      client_id: this.clientId,
      name: this.clientId,
      session_id: this.sessionId,
      version: SVC_VERSION,
      capabilities: [JOB_ENV_CAPABILITY],
      ...simulatedAttributes(this.clientId),
      facts: { ...TEST_FACTS, hostname: this.clientId },
    };
    let keepaliveMs: number;
    try {
      const reply = await peer.request('hello', hello);
      keepaliveMs = Math.min(this.options.keepaliveIntervalMs, reply.keepalive_interval_ms);
    } catch (err) {
      peer.close();
      const message = err instanceof Error ? err.message : String(err);
      return err instanceof ControlError ? `hello refused: ${message}` : `hello failed: ${message}`;
    }
    this.backoff.reset();
    this.connectedAt = Date.now();
    this.setState('connected');
    this.peer = peer;
    this.fleet.connected(url);
    this.attemptSettled();
    const pinger = this.startPinging(peer, keepaliveMs, markEnded);
    await Promise.race([ended, link.closed]);
    this.peer = undefined;
    clearTimeout(pinger.timer);
    peer.close();
    // As svc does: svcd went silent or dropped us, so cut the socket instead of waiting for a polite close.
    link.destroy();
    this.fleet.disconnected(url, this.reconnectNow);
    return undefined;
  }

  /**
   * The built-in no-op job: nothing runs, the result (no output, exit 0) is complete at once and goes out as
   * JobExecutor.run sends a real one that has ended: offered on this link right as the reply is returned. Unlike
   * the agent it is not kept for a replay if the link drops before svcd's ACK. The command `noop <min>-<max>`
   * ends after a random delay of that many milliseconds instead, so a run's results stream in over a while.
   */
  private runNoop(link: ResultLink, job: JobRun): JobRunReply {
    const startedAt = new Date().toISOString();
    const delay = NOOP_DELAY.exec(job.command);
    const finish = () => {
      const output = new JobOutput(job.jid, job.env ? NOOP_ENV_OUTPUT_LIMIT : 0, secretsOf(job));
      // A job with env prints its variables, as a script that echoes them would: the redaction benchmark's output.
      if (job.env) output.append('stdout', envEcho(job.env));
      output.finish({ status: 'successful', exit_code: 0, finished_at: new Date().toISOString(), error: '' });
      void offerJobResult(link, output, false).then(
        (outcome) => this.fleet.resultSent(outcome === 'stored'),
        () => this.fleet.resultSent(false),
      );
    };
    this.fleet.jobRun();
    if (delay) {
      const [min, max] = [Number(delay[1]), Number(delay[2])];
      setTimeout(finish, min + Math.random() * Math.max(0, max - min));
    } else finish();
    return { pid: 0, started_at: startedAt };
  }

  /** Pings every `ms`, never overlapping; silence (not an error reply) ends the session. */
  private startPinging(peer: ControlPeer, ms: number, end: () => void): { timer?: NodeJS.Timeout } {
    const handle: { timer?: NodeJS.Timeout } = {};
    const schedule = () => {
      handle.timer = setTimeout(() => {
        peer.request('ping', {}, ms).then(
          () => !peer.isClosed && schedule(),
          (err: unknown) => (err instanceof ControlError && !peer.isClosed ? schedule() : end()),
        );
      }, ms);
    };
    schedule();
    return handle;
  }
}

const NOOP_ENV_OUTPUT_LIMIT = 64 * 1024;

/** Each variable four times among filler text, about 1 KiB for a short value. */
function envEcho(env: Record<string, string>): Buffer {
  const lines = Object.entries(env).map(
    ([name, value]) =>
      `${name}=${value} ${'.'.repeat(200)} ${value}\n${'-'.repeat(200)} ${value} ${'+'.repeat(200)} ${value}\n`,
  );
  return Buffer.from(lines.join(''));
}

/** The values of the job's secret variables with their labels, as the agent redacts them. */
function secretsOf(job: JobRun): { value: string; label: string }[] {
  return Object.entries(job.redact ?? {}).flatMap(([name, label]) => {
    const value = job.env?.[name];
    return value === undefined ? [] : [{ value, label }];
  });
}
/** `noop <min>-<max>`: a no-op job that ends after a random delay in milliseconds. */
const NOOP_DELAY = /^noop (\d+)-(\d+)$/;

/** Tunnel requests as the agent answers them, with an echo in place of the target behind each tunnel. */
function serveEchoTunnels(peer: ControlPeer, link: Link): void {
  peer.on('tunnel.allowed', () => ({ allowed: true }));
  peer.on('tunnel.check_port', () => ({ open: true }));
  peer.on(
    'tunnel.open',
    ({ host, port }) =>
      new Promise<Record<string, never>>((resolve, reject) =>
        link.ssh.forwardIn(host, port, (err) => (err ? reject(err) : resolve({}))),
      ),
  );
  peer.on(
    'tunnel.close',
    ({ host, port }) =>
      new Promise<Record<string, never>>((resolve) => link.ssh.unforwardIn(host, port, () => resolve({}))),
  );
  link.ssh.on('tcp connection', (_details, accept) => {
    const channel = accept();
    channel.pipe(channel);
  });
}

/** The client ids of `count` simulated agents: `<idPrefix><n>`, n zero-padded to the width of the largest. */
export function simulatedClientIds(idPrefix: string, count: number): string[] {
  const digits = String(Math.max(0, count - 1)).length;
  return Array.from({ length: count }, (_, n) => `${idPrefix}${String(n).padStart(digits, '0')}`);
}

/** Holds `count` simulated agents; start() launches them at a bounded rate, stop() cuts every link. */
export class LoadSimulator {
  private readonly stats: SimulatorStats;
  private readonly agents: SimulatedAgent[] = [];
  private readonly abort = new AbortController();
  private readonly runs: Promise<void>[] = [];
  private readonly startConcurrency: number;
  private wakeStarter: (() => void) | undefined;

  constructor(options: SimulatorOptions) {
    const full: Required<SimulatorOptions> = {
      keepaliveIntervalMs: 20_000,
      maxRetryIntervalMs: 300_000,
      handshakeTimeoutMs: 30_000,
      resultsOnChannel: false,
      fallbackUrls: [],
      localAddresses: [],
      ...options,
    };
    for (const [n, id] of simulatedClientIds(options.idPrefix, options.count).entries())
      this.agents.push(new SimulatedAgent(id, n, this, full));
    this.stats = { ...emptyStats(), total: options.count, notStarted: options.count };
    this.startConcurrency = Math.max(1, options.startConcurrency);
  }

  /** Starts every agent, at most `startConcurrency` first attempts at a time; resolves once all have started. */
  async start(): Promise<void> {
    let free = this.startConcurrency;
    const release = () => {
      free += 1;
      this.wakeStarter?.();
    };
    for (const agent of this.agents) {
      while (free === 0 && !this.abort.signal.aborted)
        await new Promise<void>((resolve) => (this.wakeStarter = resolve));
      if (this.abort.signal.aborted) return;
      free -= 1;
      this.runs.push(agent.run(release));
    }
  }

  /** Stops every agent and cuts its link. */
  async stop(): Promise<void> {
    this.abort.abort();
    this.wakeStarter?.();
    for (const agent of this.agents) agent.stop();
    await Promise.race([Promise.all(this.runs), new Promise((r) => setTimeout(r, 3000).unref())]);
  }

  /**
   * One raw request/reply round: a `ping` on every connected link at once (in one synchronous loop); resolves
   * when every reply (or failure) is in, with Date.now() of the last one.
   */
  async pingRound(timeoutMs: number): Promise<PingRound> {
    const peers = this.agents.flatMap((agent) => (agent.peer && !agent.peer.isClosed ? [agent.peer] : []));
    let replied = 0;
    let failed = 0;
    await Promise.all(
      peers.map((peer) =>
        peer.request('ping', {}, timeoutMs).then(
          () => void (replied += 1),
          () => void (failed += 1),
        ),
      ),
    );
    return { sent: peers.length, replied, failed, finishedAt: Date.now() };
  }

  /** Churn: cuts the links of up to `count` connected agents, picked at random; they reconnect as agents do. */
  dropLinks(count: number): number {
    const connected = this.agents.filter((agent) => agent.state === 'connected');
    let dropped = 0;
    while (dropped < count && connected.length > 0) {
      const [agent] = connected.splice(Math.floor(Math.random() * connected.length), 1);
      agent?.cutLink();
      dropped += 1;
    }
    return dropped;
  }

  /** Remembers now as the mark: connectedSinceMark counts only links accepted from now on. */
  mark(): void {
    this.stats.markAt = Date.now();
    this.stats.firstDropAfterMark = 0;
    this.stats.lastDropAfterMark = 0;
  }

  /** A copy of the counters. */
  snapshot(): SimulatorStats {
    const { markAt } = this.stats;
    let connectedSinceMark = 0;
    if (markAt > 0)
      for (const agent of this.agents)
        if (agent.state === 'connected' && agent.connectedAt >= markAt) connectedSinceMark += 1;
    return {
      ...this.stats,
      failures: { ...this.stats.failures },
      connectedByUrl: { ...this.stats.connectedByUrl },
      connectedSinceMark,
    };
  }

  // Bookkeeping called by the agents.

  attempted(): void {
    this.stats.attempts += 1;
  }

  disconnected(url: string, asked: boolean): void {
    const now = Date.now();
    this.stats.disconnects += 1;
    if (asked) this.stats.reconnectsAsked += 1;
    this.stats.connectedByUrl[url] = (this.stats.connectedByUrl[url] ?? 0) - 1;
    if (this.stats.markAt === 0) return;
    if (this.stats.firstDropAfterMark === 0) this.stats.firstDropAfterMark = now;
    this.stats.lastDropAfterMark = now;
  }

  moved(from: AgentState, to: AgentState): void {
    this.stats[from] -= 1;
    this.stats[to] += 1;
  }

  connected(url: string): void {
    this.stats.connects += 1;
    this.stats.connectedByUrl[url] = (this.stats.connectedByUrl[url] ?? 0) + 1;
    this.stats.lastConnectAt = Date.now();
  }

  failed(agent: SimulatedAgent, message: string): void {
    const cause = failureCause(message);
    this.stats.failures[cause] = (this.stats.failures[cause] ?? 0) + 1;
    agent.failStreak += 1;
    this.stats.maxFailStreak = Math.max(this.stats.maxFailStreak, agent.failStreak);
  }

  jobRun(): void {
    this.stats.jobsRun += 1;
    this.stats.lastJobAt = Date.now();
  }

  resultSent(stored: boolean): void {
    if (!stored) return void (this.stats.resultsNotStored += 1);
    this.stats.resultsStored += 1;
    this.stats.lastResultAt = Date.now();
  }

  delayDrawn(ms: number): void {
    this.stats.maxDelayMs = Math.max(this.stats.maxDelayMs, ms);
  }
}
