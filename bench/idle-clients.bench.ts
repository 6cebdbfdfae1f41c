/**
 * Idle connected clients (issue 3): BENCH_CLIENTS simulated svc agents (default 10,000, spread over BENCH_WORKERS
 * simulator processes) connect to one real svcd and stay idle (keepalive pings only). Reports svcd's RSS per
 * client (VmRSS settled after all are connected and listed, minus VmRSS before the first client) and the latency
 * of GET /api/v1/clients?page[limit]=50 at that client count (sequential Bearer requests).
 *
 *   npm run build && npm run bench:idle
 *
 * Then the RSS slope per agent between BENCH_SLOPE_FROM (20) and BENCH_REAL_AGENTS (120) connected agents, each
 * on a fresh svcd: once with simulated agents (one simulator process) and once with real agent processes
 * (node packages/agent/bin/svc.js, about 75 MiB each), measured the same way (bench/support/agent-slope.ts).
 *
 * Environment: BENCH_CLIENTS (10000), BENCH_WORKERS (4), BENCH_CONNECT_CONCURRENCY (32 first attempts in flight),
 * BENCH_REQUESTS (300), BENCH_SETTLE_SECONDS (20 s of RSS samples after connecting), BENCH_CONNECT_TIMEOUT
 * (900 s), BENCH_MAX_HANDSHAKES (svcd's max_concurrent_ssh_handshakes; unset = svcd's default),
 * BENCH_SVCD_NODE_ARGS (extra node flags for svcd), BENCH_STRICT=1 (exit 1 when a target fails);
 * for the slope: BENCH_REAL_AGENTS (120; 0 = skip the slope), BENCH_SLOPE_FROM (20), BENCH_SLOPE_SETTLE_SECONDS
 * (20), BENCH_SLOPE_WARMUP (300 simulated agents connected and dropped first), BENCH_SLOPE_CONCURRENCY (8 agents
 * connecting at once).
 *
 * The curve up to svcd's open-file limit (issue 30) instead: BENCH_CURVE=5000,10000,15000 fills one svcd in those
 * stages and then up to its limit less its reserve, measuring at each (bench/support/idle-curve.ts); then the
 * next agent must get 503, and svcd is stopped with all of them connected. BENCH_CLIENTS is not used; the settle
 * time per stage is BENCH_SETTLE_SECONDS.
 *
 *   BENCH_CURVE=5000,10000,15000 BENCH_SETTLE_SECONDS=10 BENCH_REQUESTS=300 npm run bench:idle
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { measureSlope, type SlopeResult } from './support/agent-slope.js';
import { runBench } from './support/bench-runner.js';
import { envNumber } from './support/child-processes.js';
import { envSteps, loadSettings } from './support/load-settings.js';
import { startLoadSetup, waitListed } from './support/load-setup.js';
import { sequentialLatencies, summarize } from './support/latency.js';
import { cpuWhile } from './support/proc-stats.js';
import {
  checksTable,
  loadAverage,
  machine,
  progress,
  table,
  writeResult,
  type Check,
} from './support/report.js';
import type { FleetStats } from './support/simulator-fleet.js';
import type { SvcdProcess } from './support/svcd-process.js';
import { CURVE_TARGETS, runIdleCurve } from './support/idle-curve.js';

const TARGETS = { maxRssPerClientKiB: 32, maxClientsP99Ms: 50, maxRssPerRealAgentKiB: 32 };

const SETTINGS = loadSettings(10_000);
const { clients: CLIENTS, workers: WORKERS } = SETTINGS;
const REQUESTS = envNumber('BENCH_REQUESTS', 300, 100_000);
const SETTLE_SECONDS = envNumber('BENCH_SETTLE_SECONDS', 20, 3600);
const SLOPE_TO = process.env.BENCH_REAL_AGENTS === '0' ? 0 : envNumber('BENCH_REAL_AGENTS', 120, 1000);
const SLOPE_FROM = envNumber('BENCH_SLOPE_FROM', 20, 1000);
const SLOPE_SETTLE_SECONDS = envNumber('BENCH_SLOPE_SETTLE_SECONDS', 20, 3600);
const SLOPE_WARMUP =
  process.env.BENCH_SLOPE_WARMUP === '0' ? 0 : envNumber('BENCH_SLOPE_WARMUP', 300, 100_000);
const SLOPE_CONCURRENCY = envNumber('BENCH_SLOPE_CONCURRENCY', 8, 1000);
const CURVE_STEPS = envSteps('BENCH_CURVE');
const LIST_PATH = '/clients?page[limit]=50';
const WARMUP_REQUESTS = 30;
/** RSS samples (one per second) whose median is the settled value. */
const SETTLED_SAMPLES = 5;
/** How long svcd may take to stop gracefully with every client connected before it is killed. */
const STOP_GRACE_MS = 120_000;

const median = (values: number[]) => summarize(values).p50;
const mib = (kib: number) => `${(kib / 1024).toFixed(1)} MiB`;

/** One VmRSS sample per second for `seconds`; returns them all. */
async function sampleRss(svcd: SvcdProcess, seconds: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < seconds; i++) {
    samples.push(svcd.rssKiB());
    await sleep(1_000);
  }
  return samples;
}

function describeFleet(s: FleetStats): string {
  const failures = Object.entries(s.failures)
    .map(([cause, n]) => `${cause} ${n}`)
    .join(', ');
  return (
    `${s.connected}/${CLIENTS} connected, ${s.handshaking} handshaking, ${s.backingOff} backing off, ` +
    `${s.notStarted} not started${failures ? `; failed attempts: ${failures}` : ''}`
  );
}

/** The RSS slope per agent, simulated then real agents, each on a fresh svcd. */
async function measureSlopes(): Promise<SlopeResult[]> {
  const results: SlopeResult[] = [];
  for (const kind of ['simulated', 'real'] as const) {
    progress(`RSS slope ${SLOPE_FROM} → ${SLOPE_TO} with ${kind} agents (load average ${loadAverage()})`);
    results.push(
      await measureSlope({
        kind,
        from: SLOPE_FROM,
        to: SLOPE_TO,
        settleSeconds: SLOPE_SETTLE_SECONDS,
        samples: SETTLED_SAMPLES,
        connectConcurrency: SLOPE_CONCURRENCY,
        svcdNodeArgs: SETTINGS.svcdNodeArgs,
        warmupAgents: SLOPE_WARMUP,
      }),
    );
  }
  return results;
}

function slopeTable(slopes: SlopeResult[]): string {
  const label = {
    settled: `svcd RSS, settled ${SLOPE_SETTLE_SECONDS} s`,
    afterGc: 'svcd RSS after a full GC',
    liveHeap: 'live JS heap after a full GC',
  };
  const rows = slopes.flatMap((r) =>
    (['settled', 'afterGc', 'liveHeap'] as const).map((which) => [
      `${r.kind} agents: ${label[which]}`,
      mib(r[which].fromKiB),
      mib(r[which].toKiB),
      `${r[which].perAgentKiB.toFixed(1)} KiB`,
    ]),
  );
  return [
    `svcd memory per agent, ${SLOPE_FROM} → ${SLOPE_TO} agents, each kind on a fresh svcd ` +
      `(${SLOPE_WARMUP} simulated agents connected and dropped first; RSS median of ${SETTLED_SAMPLES} s)`,
    '',
    table(['agents: figure', `at ${SLOPE_FROM}`, `at ${SLOPE_TO}`, 'per agent'], rows),
  ].join('\n');
}

/** BENCH_CURVE: the stages up to the open-file limit. */
async function curveMain(): Promise<boolean> {
  const setup = await startLoadSetup('idle-curve', SETTINGS, 1, { metrics: true });
  await sequentialLatencies(setup.api, LIST_PATH, WARMUP_REQUESTS);
  await sequentialLatencies(setup.api, '/status', WARMUP_REQUESTS);
  const rssBefore = median(await sampleRss(setup.svcd, SETTLED_SAMPLES));
  progress(`svcd RSS before any client: ${mib(rssBefore)}`);
  const curve = await runIdleCurve({
    setup,
    steps: CURVE_STEPS,
    workers: WORKERS,
    connectConcurrency: SETTINGS.connectConcurrency,
    connectTimeoutS: SETTINGS.connectTimeoutS,
    requests: REQUESTS,
    settleSeconds: SETTLE_SECONDS,
    rssBeforeKiB: rssBefore,
    stopGraceMs: STOP_GRACE_MS,
  });
  const file = await writeResult('idle-curve', {
    date: new Date().toISOString(),
    settings: { ...SETTINGS, steps: CURVE_STEPS, requests: REQUESTS, settleSeconds: SETTLE_SECONDS },
    machine: machine(),
    targets: CURVE_TARGETS,
    rssBeforeKiB: rssBefore,
    ...curve,
  });
  process.stdout.write(
    [
      '',
      `Idle agents up to the open-file limit: limit ${curve.limit}, agents refused from ${curve.highWater} ` +
        `descriptors on; one svcd (load average before ${setup.loadBefore}, after ${loadAverage()})`,
      '',
      curve.report,
      '',
      `graceful stop (SIGTERM to exit) with every agent connected: ${curve.stopSeconds.toFixed(1)} s ` +
        `(svcd's own CPU meanwhile: ${curve.stopCpuSeconds?.toFixed(1) ?? '?'} s; agents lost their first link ` +
        `${secondsAfter(curve.stopTimeline.firstLinkLostS)} and their last ` +
        `${secondsAfter(curve.stopTimeline.lastLinkLostS)} after the SIGTERM; the simulator processes on the same ` +
        `cores used ${curve.stopTimeline.simulatorsCpuS.toFixed(1)} s of CPU meanwhile)`,
      '',
      checksTable(curve.checks),
      '',
      `results written to ${file}`,
      '',
    ].join('\n'),
  );
  return curve.checks.every((c) => c.pass);
}

const secondsAfter = (s: number | undefined) => (s === undefined ? 'never' : `${s.toFixed(1)} s`);

async function main(): Promise<boolean> {
  if (CURVE_STEPS.length > 0) return curveMain();
  const { svcd, api, loadBefore, newFleet } = await startLoadSetup('idle', SETTINGS, 1);

  // Warm the API paths up before the baseline so the JIT's code is not counted as per-client memory.
  await sequentialLatencies(api, LIST_PATH, WARMUP_REQUESTS);
  await sequentialLatencies(api, '/status', WARMUP_REQUESTS);
  const rssBeforeSamples = await sampleRss(svcd, SETTLED_SAMPLES);
  const rssBefore = median(rssBeforeSamples);
  progress(`svcd RSS before any client: ${mib(rssBefore)}`);

  const fleet = newFleet();
  const connectStart = performance.now();
  const cpuBefore = svcd.cpuMs();
  fleet.start();
  const connected = await fleet.waitAllConnected(SETTINGS.connectTimeoutS * 1000, (s) =>
    progress(`${describeFleet(s)}; svcd RSS ${mib(svcd.rssKiB())}`),
  );
  const connectSeconds = (performance.now() - connectStart) / 1000;
  const connectCpuMs = svcd.cpuMs() - cpuBefore;
  const status = await waitListed(api, CLIENTS);
  const listedConnected = await api.getJson('/clients?filter[connection_state]=connected&page[limit]=1');
  if (listedConnected.meta?.count !== CLIENTS)
    throw new Error(
      `GET /clients lists ${String(listedConnected.meta?.count)} connected, expected ${CLIENTS}`,
    );
  progress(
    `all ${CLIENTS} connected in ${connectSeconds.toFixed(1)} s and listed; sampling svcd RSS for ${SETTLE_SECONDS} s`,
  );

  const rssAfterSamples = await sampleRss(svcd, SETTLE_SECONDS);
  const rssAfter = median(rssAfterSamples.slice(-SETTLED_SAMPLES));
  const perClientKiB = (rssAfter - rssBefore) / CLIENTS;
  progress(`svcd RSS ${mib(rssAfter)}: ${perClientKiB.toFixed(1)} KiB per client; timing GET ${LIST_PATH}`);

  await sequentialLatencies(api, LIST_PATH, WARMUP_REQUESTS);
  const latencies = summarize(await sequentialLatencies(api, LIST_PATH, REQUESTS));
  const sample = await api.getJson<unknown[]>(LIST_PATH);
  if (sample.meta?.count !== CLIENTS || sample.data.length !== 50)
    throw new Error(`GET ${LIST_PATH}: count ${String(sample.meta?.count)}, ${sample.data.length} records`);
  const rssAfterRequests = svcd.rssKiB();
  const held = fleet.stats();
  fleet.check();
  progress(`SIGTERM to svcd with ${CLIENTS} clients connected`);
  const stop = await cpuWhile(svcd.pid, () => svcd.stop(STOP_GRACE_MS));
  const stopSeconds = stop.wallMs / 1000;
  progress(
    `svcd stopped in ${stopSeconds.toFixed(1)} s, ${((stop.cpuMs ?? NaN) / 1000).toFixed(1)} s of its own CPU`,
  );
  await fleet.stop();
  const slopes = SLOPE_TO > 0 ? await measureSlopes() : [];
  const real = slopes.find((r) => r.kind === 'real');

  const checks: Check[] = [
    {
      target: 'svcd RSS per idle client',
      value: `${perClientKiB.toFixed(1)} KiB`,
      limit: `<= ${TARGETS.maxRssPerClientKiB} KiB`,
      pass: perClientKiB <= TARGETS.maxRssPerClientKiB,
    },
    {
      target: `GET ${LIST_PATH} p99 at ${CLIENTS} clients`,
      value: `${latencies.p99.toFixed(1)} ms`,
      limit: `< ${TARGETS.maxClientsP99Ms} ms`,
      pass: latencies.p99 < TARGETS.maxClientsP99Ms,
    },
    ...(real
      ? [
          {
            target: `svcd RSS per real agent, slope ${SLOPE_FROM} → ${SLOPE_TO} (after a full GC)`,
            value: `${real.afterGc.perAgentKiB.toFixed(1)} KiB`,
            limit: `<= ${TARGETS.maxRssPerRealAgentKiB} KiB`,
            pass: real.afterGc.perAgentKiB <= TARGETS.maxRssPerRealAgentKiB,
          },
        ]
      : []),
  ];
  const figures = {
    clients: CLIENTS,
    workers: WORKERS,
    connectSeconds,
    connectsPerSecond: CLIENTS / connectSeconds,
    svcdCpuMsPerConnect: connectCpuMs / CLIENTS,
    rssBeforeKiB: rssBefore,
    rssAfterKiB: rssAfter,
    rssPeakKiB: Math.max(...rssAfterSamples),
    rssAfterRequestsKiB: rssAfterRequests,
    perClientKiB,
    clientsListMs: latencies,
    simulatorRssKiB: held.rssKiB,
    disconnectsWhileHeld: held.disconnects,
    gracefulStopSeconds: stopSeconds,
    slopes,
  };
  const out = [
    '',
    `Idle connected clients: ${CLIENTS} simulated agents in ${WORKERS} processes, one svcd ` +
      `(load average before ${loadBefore}, after ${loadAverage()})`,
    '',
    table(
      ['figure', 'value'],
      [
        ['connect time (all listed as connected)', `${connectSeconds.toFixed(1)} s`],
        ['connects/s', (CLIENTS / connectSeconds).toFixed(0)],
        ['svcd CPU per connect', `${(connectCpuMs / CLIENTS).toFixed(2)} ms`],
        ['svcd RSS before any client (median of 5 s)', mib(rssBefore)],
        [`svcd RSS with ${CLIENTS} clients (median of the last 5 of ${SETTLE_SECONDS} s)`, mib(rssAfter)],
        ['svcd RSS peak while settling', mib(figures.rssPeakKiB)],
        ['svcd RSS after the list requests', mib(rssAfterRequests)],
        ['svcd RSS per client', `${perClientKiB.toFixed(1)} KiB`],
        [
          `GET ${LIST_PATH} (${REQUESTS} sequential) p50 / p90 / p99 / max`,
          [latencies.p50, latencies.p90, latencies.p99, latencies.max].map((v) => v.toFixed(1)).join(' / ') +
            ' ms',
        ],
        [
          '/status clients_connected / disconnected',
          `${status.clients_connected} / ${status.clients_disconnected}`,
        ],
        ['links lost while held (should be 0)', String(held.disconnects)],
        ['simulator RSS (all workers)', mib(held.rssKiB)],
        [`svcd graceful stop (SIGTERM to exit) with ${CLIENTS} connected`, `${stopSeconds.toFixed(1)} s`],
      ],
    ),
    '',
    ...(slopes.length > 0 ? [slopeTable(slopes), ''] : []),
    checksTable(checks),
    '',
  ];
  const file = await writeResult('idle-clients', {
    date: new Date().toISOString(),
    settings: {
      ...SETTINGS,
      requests: REQUESTS,
      settleSeconds: SETTLE_SECONDS,
      slope: {
        from: SLOPE_FROM,
        to: SLOPE_TO,
        settleSeconds: SLOPE_SETTLE_SECONDS,
        warmup: SLOPE_WARMUP,
        concurrency: SLOPE_CONCURRENCY,
      },
    },
    machine: machine(),
    targets: TARGETS,
    checks,
    figures,
    rssSamplesKiB: { before: rssBeforeSamples, after: rssAfterSamples },
    fleet: connected,
  });
  out.push(`results written to ${file}`, '');
  process.stdout.write(out.join('\n'));
  return checks.every((c) => c.pass);
}

await runBench(main, SETTINGS.strict);
