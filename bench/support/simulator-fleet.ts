/**
 * The bench side of the load simulator: starts W worker processes (bench/simulator-worker.ts) that share the
 * clients between them, reads their JSON stats lines and sums them up.
 */
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { children, startChild, type Managed } from './child-processes.js';
import { processCpuMs } from './proc-stats.js';
import { emptyStats, simulatedClientIds, type PingRound, type SimulatorStats } from './load-simulator.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const WORKER_SCRIPT = join(HERE, '..', 'simulator-worker.ts');

export interface FleetOptions {
  url: string;
  authId: string;
  password: string;
  fingerprint: string;
  clients: number;
  workers: number;
  /** First connection attempts in flight at once, over all workers. */
  startConcurrency: number;
  /** Client ids are `<idPrefix><worker>-<n>` (default `sim-`), so that two fleets can share one svcd. */
  idPrefix?: string;
  /** Other nodes of a cluster, where an agent goes once its link to `url` is lost (LoadSimulator). */
  fallbackUrls?: string[];
  /** Source addresses the agents connect from, in turn (LoadSimulator's localAddresses); default the system's. */
  localAddresses?: string[];
}

export interface FleetStats extends SimulatorStats {
  workers: number;
  /** Workers that have reported at least once. */
  reporting: number;
  /** Sum of the workers' RSS. */
  rssKiB: number;
}

type WorkerStats = SimulatorStats & { rssKiB: number };

/** A ping round over the whole fleet: every worker started it at `startAt` (Date.now() scale). */
export interface FleetPingRound {
  sent: number;
  replied: number;
  failed: number;
  /** From the common start to the last reply of the slowest worker. */
  ms: number;
}

/** How long before the common start of a ping round the workers are told (so that all of them have it). */
const ROUND_LEAD_MS = 100;

export class SimulatorFleet {
  private readonly workers: Managed[] = [];
  private readonly latest = new Map<number, WorkerStats>();
  private readonly roundReports: (PingRound & { round: number })[] = [];
  private rounds = 0;

  constructor(private readonly options: FleetOptions) {}

  /** Starts the workers; each begins connecting its share of the clients at once. */
  start(): void {
    const { workers, startConcurrency, fallbackUrls, localAddresses } = this.options;
    for (const [w, { idPrefix, count }] of this.shares().entries()) {
      if (count === 0) continue;
      const config = {
        worker: w,
        url: this.options.url,
        authId: this.options.authId,
        password: this.options.password,
        fingerprint: this.options.fingerprint,
        idPrefix,
        count,
        startConcurrency: Math.max(1, Math.round(startConcurrency / workers)),
        ...(fallbackUrls ? { fallbackUrls } : {}),
        ...(localAddresses && localAddresses.length > 0 ? { localAddresses } : {}),
      };
      const child = startChild(
        `simulator ${w}${this.options.idPrefix ? ` (${this.options.idPrefix})` : ''}`,
        process.execPath,
        ['--import', 'tsx', WORKER_SCRIPT, JSON.stringify(config)],
        { cwd: join(HERE, '..'), stdin: true },
      );
      const lines = createInterface({ input: child.proc.stdout! });
      lines.on('line', (line) => {
        try {
          const parsed = JSON.parse(line) as WorkerStats &
            PingRound & { type?: string; worker?: number; round: number };
          if (parsed.type === 'stats' && typeof parsed.worker === 'number')
            this.latest.set(parsed.worker, parsed);
          if (parsed.type === 'ping-round') this.roundReports.push(parsed);
        } catch {
          // not a stats line: kept in the child's output tail
        }
      });
      this.workers.push(child);
    }
  }

  /** Each worker's id prefix and number of clients. */
  private shares(): { idPrefix: string; count: number }[] {
    const { clients, workers } = this.options;
    return Array.from({ length: workers }, (_, w) => ({
      idPrefix: `${this.options.idPrefix ?? 'sim-'}${w}-`,
      count: Math.floor(clients / workers) + (w < clients % workers ? 1 : 0),
    }));
  }

  /** Every client id of the fleet, as its workers name their agents. */
  clientIds(): string[] {
    return this.shares().flatMap(({ idPrefix, count }) => simulatedClientIds(idPrefix, count));
  }

  /** The sum over the workers' latest reports. */
  stats(): FleetStats {
    const sum: FleetStats = {
      workers: this.workers.length,
      reporting: this.latest.size,
      rssKiB: 0,
      ...emptyStats(),
    };
    for (const s of this.latest.values()) {
      for (const key of [
        'rssKiB',
        'total',
        'connected',
        'handshaking',
        'backingOff',
        'notStarted',
        'attempts',
        'connects',
        'reconnectsAsked',
        'disconnects',
        'connectedSinceMark',
        'jobsRun',
        'resultsStored',
        'resultsNotStored',
      ] as const)
        sum[key] += s[key];
      for (const [cause, n] of Object.entries(s.failures))
        sum.failures[cause] = (sum.failures[cause] ?? 0) + n;
      for (const [url, n] of Object.entries(s.connectedByUrl))
        sum.connectedByUrl[url] = (sum.connectedByUrl[url] ?? 0) + n;
      sum.lastConnectAt = Math.max(sum.lastConnectAt, s.lastConnectAt);
      sum.lastResultAt = Math.max(sum.lastResultAt, s.lastResultAt);
      sum.lastJobAt = Math.max(sum.lastJobAt, s.lastJobAt);
      sum.maxFailStreak = Math.max(sum.maxFailStreak, s.maxFailStreak);
      sum.maxDelayMs = Math.max(sum.maxDelayMs, s.maxDelayMs);
      // The mark as the latest worker got it; drops as the earliest and the latest over all workers.
      sum.markAt = Math.max(sum.markAt, s.markAt);
      if (s.firstDropAfterMark > 0)
        sum.firstDropAfterMark = Math.min(sum.firstDropAfterMark || Infinity, s.firstDropAfterMark);
      sum.lastDropAfterMark = Math.max(sum.lastDropAfterMark, s.lastDropAfterMark);
    }
    return sum;
  }

  /**
   * Marks now in every worker (SIGUSR2) and waits until all of them have reported it (at most 10 s), so that
   * stats().connectedSinceMark counts only links accepted afterwards.
   */
  async mark(): Promise<number> {
    const asked = Date.now();
    for (const worker of this.workers) worker.proc.kill('SIGUSR2');
    const deadline = asked + 10_000;
    while ([...this.latest.values()].some((s) => s.markAt < asked)) {
      this.check();
      if (Date.now() > deadline)
        throw new Error('the simulator workers did not confirm the mark within 10 s');
      await sleep(20);
    }
    return asked;
  }

  /**
   * One raw request/reply round over every connected link of every worker: each worker sends a `ping` on all its
   * links at one common wall-clock start and reports when its last reply came in; the round lasts from that
   * start to the latest report (same machine, same clock).
   */
  async pingRound(timeoutMs = 120_000): Promise<FleetPingRound> {
    const round = ++this.rounds;
    const startAt = Date.now() + ROUND_LEAD_MS;
    const command = `${JSON.stringify({ type: 'ping-round', round, startAt })}\n`;
    for (const worker of this.workers) worker.proc.stdin?.write(command);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const reports = this.roundReports.filter((r) => r.round === round);
      if (reports.length === this.workers.length) {
        return {
          sent: reports.reduce((n, r) => n + r.sent, 0),
          replied: reports.reduce((n, r) => n + r.replied, 0),
          failed: reports.reduce((n, r) => n + r.failed, 0),
          ms: Math.max(...reports.map((r) => r.finishedAt)) - startAt,
        };
      }
      this.check();
      if (Date.now() > deadline) throw new Error(`ping round ${round} did not finish within ${timeoutMs} ms`);
      await sleep(5);
    }
  }

  /** Churn: every worker cuts the links of its share of `count` connected clients (they reconnect by themselves). */
  dropLinks(count: number): void {
    const share = Math.ceil(count / Math.max(1, this.workers.length));
    for (const worker of this.workers)
      worker.proc.stdin?.write(`${JSON.stringify({ type: 'drop', count: share })}\n`);
  }

  /** CPU time (user + system) the workers have used so far, in ms. */
  cpuMs(): number {
    return this.workers.reduce((sum, worker) => sum + (processCpuMs(worker.proc.pid) ?? 0), 0);
  }

  /** Throws when a worker has died. */
  check(): void {
    for (const worker of this.workers)
      if (!worker.running)
        throw new Error(`${worker.name} stopped (${worker.describeExit()}):\n${worker.tail()}`);
  }

  /**
   * Waits until every client is connected, at most `timeoutMs`; `tick` is called about every `tickMs` (progress
   * output, extra checks). Resolves with the last stats.
   */
  async waitAllConnected(
    timeoutMs: number,
    tick: (stats: FleetStats) => Promise<void> | void,
    tickMs = 2_000,
  ): Promise<FleetStats> {
    const deadline = Date.now() + timeoutMs;
    let nextTick = 0;
    let lastTicked = -1;
    for (;;) {
      this.check();
      const stats = this.stats();
      const done = stats.reporting === stats.workers && stats.connected === this.options.clients;
      // Quiet while nothing moves: a tick every tickMs while the count changes, else every 5 ticks.
      const due = Date.now() >= nextTick + (stats.connected === lastTicked ? 4 * tickMs : 0);
      if (done || due) {
        await tick(stats);
        nextTick = Date.now() + tickMs;
        lastTicked = stats.connected;
      }
      if (done) return stats;
      if (Date.now() >= deadline) {
        throw new Error(
          `only ${stats.connected} of ${this.options.clients} simulated clients connected within ${timeoutMs / 1000} s; ` +
            `failures ${JSON.stringify(stats.failures)}`,
        );
      }
      await sleep(100);
    }
  }

  /** Stops every worker (SIGTERM; they cut their links and exit). */
  async stop(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.stop()));
    for (const worker of this.workers) children.delete(worker);
  }
}
