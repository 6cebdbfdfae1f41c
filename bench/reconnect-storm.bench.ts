/**
 * Reconnect storm (issue 3): BENCH_CLIENTS simulated svc agents (default 5,000, spread over BENCH_WORKERS simulator
 * processes) are connected to one real svcd; svcd is killed with SIGKILL and started again at once with the same
 * config and data. The agents reconnect on their own, as svc does (backoff with full jitter from 1 s, same session
 * id). Reports the time from the kill until every agent is connected again, and the latency of GET /api/v1/status
 * (Bearer) probed at a steady BENCH_PROBE_RATE from the moment the restarted svcd's API answers until all are back.
 *
 *   npm run build && npm run bench:storm
 *
 * Environment: BENCH_CLIENTS (5000), BENCH_WORKERS (4), BENCH_CONNECT_CONCURRENCY (32 first attempts in flight
 * while building up), BENCH_PROBE_RATE (20 req/s), BENCH_HOLD_SECONDS (5 s connected before the kill),
 * BENCH_STORM_TIMEOUT (300 s at most for the storm), BENCH_CONNECT_TIMEOUT (900 s for the build-up),
 * BENCH_MAX_HANDSHAKES (svcd's max_concurrent_ssh_handshakes; unset = svcd's default), BENCH_SVCD_NODE_ARGS,
 * BENCH_STRICT=1 (exit 1 when a target fails).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { runBench } from './support/bench-runner.js';
import { envNumber } from './support/child-processes.js';
import { loadSettings } from './support/load-settings.js';
import { startLoadSetup, waitListed } from './support/load-setup.js';
import { RateProbe, summarize } from './support/latency.js';
import {
  checksTable,
  loadAverage,
  machine,
  progress,
  table,
  writeResult,
  type Check,
} from './support/report.js';
import type { FleetStats, SimulatorFleet } from './support/simulator-fleet.js';
import { API_USER } from './support/svcd-process.js';

const TARGETS = { maxReconnectSeconds: 60, maxStatusP99Ms: 200 };

const SETTINGS = loadSettings(5_000);
const { clients: CLIENTS, workers: WORKERS } = SETTINGS;
const PROBE_RATE = envNumber('BENCH_PROBE_RATE', 20, 1_000);
const HOLD_SECONDS = envNumber('BENCH_HOLD_SECONDS', 5, 3600);
const STORM_TIMEOUT_S = envNumber('BENCH_STORM_TIMEOUT', 300, 86_400);
const POLL_MS = 100;
const PROGRESS_MS = 2_000;

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

function failuresSince(before: FleetStats, after: FleetStats): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [cause, n] of Object.entries(after.failures)) {
    const diff = n - (before.failures[cause] ?? 0);
    if (diff > 0) out[cause] = diff;
  }
  return out;
}

const describeFailures = (failures: Record<string, number>) =>
  Object.entries(failures)
    .map(([cause, n]) => `${cause} ${n}`)
    .join(', ') || 'none';

/** Waits (at most 60 s) until svcd's /status counts `count` connected clients. */
interface StormOutcome {
  /** ms after the kill, one point per poll: agents connected at all, and on a link accepted after the kill. */
  timeline: { ms: number; connected: number; back: number }[];
  final: FleetStats;
  /** ms from the kill to the last accepted hello, or undefined when not all came back in time. */
  allBackMs: number | undefined;
}

/** Polls the fleet from the kill until all agents are connected again or the storm timeout passes. */
async function followStorm(fleet: SimulatorFleet, killAt: number): Promise<StormOutcome> {
  const timeline: StormOutcome['timeline'] = [];
  const deadline = killAt + STORM_TIMEOUT_S * 1000;
  let nextProgress = 0;
  for (;;) {
    fleet.check();
    const stats = fleet.stats();
    const ms = Date.now() - killAt;
    timeline.push({ ms, connected: stats.connected, back: stats.connectedSinceMark });
    const allBack = stats.connectedSinceMark === CLIENTS;
    if (allBack || Date.now() >= nextProgress) {
      // "still on the old link": the agent has not noticed yet that svcd is gone.
      progress(
        `t+${seconds(ms)}: ${stats.connectedSinceMark}/${CLIENTS} back, ` +
          `${stats.connected - stats.connectedSinceMark} still on the old link, ` +
          `${stats.handshaking} handshaking, ${stats.backingOff} backing off`,
      );
      nextProgress = Date.now() + PROGRESS_MS;
    }
    if (allBack) return { timeline, final: stats, allBackMs: stats.lastConnectAt - killAt };
    if (Date.now() >= deadline) return { timeline, final: stats, allBackMs: undefined };
    await sleep(POLL_MS);
  }
}

/** ms after the kill at which `fraction` of the agents were connected again (polled, so up to POLL_MS late). */
const timeTo = (timeline: StormOutcome['timeline'], fraction: number): number | undefined =>
  timeline.find((p) => p.back >= Math.ceil(CLIENTS * fraction))?.ms;

async function main(): Promise<boolean> {
  const { svcd, api, loadBefore, newFleet } = await startLoadSetup('storm', SETTINGS, 8);

  const fleet = newFleet();
  fleet.start();
  await fleet.waitAllConnected(SETTINGS.connectTimeoutS * 1000, (s) =>
    progress(`building up: ${s.connected}/${CLIENTS} connected, ${s.handshaking} handshaking`),
  );
  await waitListed(api, CLIENTS);
  progress(
    `all ${CLIENTS} connected and listed; holding ${HOLD_SECONDS} s, then SIGKILL svcd and restart it`,
  );
  await sleep(HOLD_SECONDS * 1000);
  await fleet.mark();
  const before = fleet.stats();

  const killAt = Date.now();
  await svcd.kill();
  await svcd.restart();
  const apiUpMs = Date.now() - killAt;
  // The token outlives the restart (its session row and the signing secret are in the data dir).
  const tokenCheck = await api.get('/status');
  const reloggedIn = tokenCheck.status === 401;
  if (reloggedIn) await api.login(API_USER.name, API_USER.password);
  const probe = new RateProbe(api, '/status', PROBE_RATE);
  probe.start();
  progress(`svcd killed and restarted; its API answered ${seconds(apiUpMs)} after the kill; probing /status`);
  let storm: StormOutcome;
  try {
    storm = await followStorm(fleet, killAt);
  } finally {
    await probe.stop();
  }
  const svcdCpuMs = svcd.cpuMs();
  const status = storm.allBackMs === undefined ? undefined : await waitListed(api, CLIENTS);

  const ok = probe.samples.filter((s) => s.status === 200);
  const failedProbes = probe.samples.length - ok.length;
  const latency = summarize(probe.samples.map((s) => s.ms));
  const notBack = CLIENTS - storm.final.connectedSinceMark;
  const sinceKill = (at: number) => (at > 0 ? at - killAt : undefined);
  const drops = {
    first: sinceKill(storm.final.firstDropAfterMark),
    last: sinceKill(storm.final.lastDropAfterMark),
  };
  const failures = failuresSince(before, storm.final);
  const checks: Check[] = [
    {
      target: `all ${CLIENTS} clients reconnected after SIGKILL + restart`,
      value:
        storm.allBackMs === undefined
          ? `${notBack} not back after ${STORM_TIMEOUT_S} s`
          : seconds(storm.allBackMs),
      limit: `<= ${TARGETS.maxReconnectSeconds} s`,
      pass: storm.allBackMs !== undefined && storm.allBackMs <= TARGETS.maxReconnectSeconds * 1000,
    },
    {
      target: `GET /status p99 during the storm (${PROBE_RATE} req/s)`,
      value: `${latency.p99.toFixed(1)} ms${failedProbes ? `, ${failedProbes} failed` : ''}`,
      limit: `< ${TARGETS.maxStatusP99Ms} ms, none failed`,
      pass: latency.p99 < TARGETS.maxStatusP99Ms && failedProbes === 0 && latency.count > 0,
    },
  ];
  const quantile = (q: number) => {
    const ms = timeTo(storm.timeline, q);
    return ms === undefined ? 'not reached' : seconds(ms);
  };
  const figures = {
    clients: CLIENTS,
    workers: WORKERS,
    apiUpMs,
    allBackMs: storm.allBackMs,
    allBackAfterApiUpMs: storm.allBackMs === undefined ? undefined : storm.allBackMs - apiUpMs,
    notBack,
    reconnectTimes: { p50: quantile(0.5), p90: quantile(0.9), p99: quantile(0.99) },
    linkLossNoticedMs: drops,
    attempts: storm.final.attempts - before.attempts,
    failures,
    maxFailStreak: storm.final.maxFailStreak,
    maxDelayMs: storm.final.maxDelayMs,
    svcdCpuMsSinceRestart: svcdCpuMs,
    svcdRssKiB: svcd.rssKiB(),
    reloggedIn,
    statusProbe: { ...latency, failed: failedProbes, skipped: probe.skipped, rate: PROBE_RATE },
    statusAfter: status,
  };
  const out = [
    '',
    `Reconnect storm: ${CLIENTS} simulated agents in ${WORKERS} processes; svcd SIGKILLed and restarted ` +
      `(load average before ${loadBefore}, after ${loadAverage()})`,
    '',
    table(
      ['figure', 'value'],
      [
        ['svcd API answering again after the kill', seconds(apiUpMs)],
        [
          'agents noticed the lost link (first / last)',
          `${drops.first === undefined ? '-' : seconds(drops.first)} / ${drops.last === undefined ? '-' : seconds(drops.last)}`,
        ],
        [
          '50% / 90% / 99% of the clients back after',
          `${quantile(0.5)} / ${quantile(0.9)} / ${quantile(0.99)}`,
        ],
        [
          'all clients back after the kill',
          storm.allBackMs === undefined
            ? `no: ${notBack} missing after ${STORM_TIMEOUT_S} s`
            : seconds(storm.allBackMs),
        ],
        ['clients that did not come back', String(notBack)],
        ['connection attempts during the storm', String(figures.attempts)],
        ['failed attempts by cause', describeFailures(failures)],
        [
          'most failed attempts in a row (one agent) / longest backoff drawn',
          `${figures.maxFailStreak} / ${seconds(figures.maxDelayMs)}`,
        ],
        ['svcd CPU from restart to all back', seconds(svcdCpuMs)],
        [
          `GET /status at ${PROBE_RATE} req/s: p50 / p90 / p99 / max`,
          [latency.p50, latency.p90, latency.p99, latency.max].map((v) => v.toFixed(1)).join(' / ') + ' ms',
        ],
        [
          '/status probes sent / failed / skipped (too many in flight)',
          `${latency.count} / ${failedProbes} / ${probe.skipped}`,
        ],
      ],
    ),
    '',
    checksTable(checks),
    '',
  ];
  const file = await writeResult('reconnect-storm', {
    date: new Date().toISOString(),
    settings: {
      ...SETTINGS,
      probeRate: PROBE_RATE,
      holdSeconds: HOLD_SECONDS,
      stormTimeoutSeconds: STORM_TIMEOUT_S,
    },
    machine: machine(),
    targets: TARGETS,
    checks,
    figures,
    timeline: storm.timeline,
    probeSamples: probe.samples,
  });
  out.push(`results written to ${file}`, '');
  process.stdout.write(out.join('\n'));
  return checks.every((c) => c.pass);
}

await runBench(main, SETTINGS.strict);
