/**
 * Soak (issue 24; not in CI): BENCH_CLIENTS simulated agents (default 2,000, speaking the real link) stay on one
 * built svcd for BENCH_SOAK_SECONDS (default 3,600) while jobs run, tunnels open, carry a few bytes and close, and
 * every BENCH_SOAK_CHURN_SECONDS a share of the agents lose their link and reconnect as agents do. svcd's RSS,
 * open file descriptors and event-loop delay are sampled throughout.
 *
 *   npm run build && npm run bench:soak
 *   BENCH_SOAK_SECONDS=180 npm run bench:soak      # a short run
 *
 * Targets, after the warm-up: RSS and open fds flat within 10 % (the mean of the last three samples against the
 * mean of the first three), and the event-loop delay p99 of every 5 s window under 50 ms (measured inside svcd by
 * bench/support/loop-delay-probe.ts, loaded with --import). The same probe in an idle node process running
 * alongside shows what the machine's load alone does to an event loop.
 *
 * Environment: BENCH_SOAK_SECONDS (3600), BENCH_SOAK_WARMUP_SECONDS (10 % of the run, 30..300),
 * BENCH_SOAK_SAMPLE_SECONDS (10), BENCH_SOAK_CHURN_SECONDS (30), BENCH_SOAK_CHURN_PERCENT (5 % of the agents
 * dropped each time), BENCH_SOAK_JOBS_PER_SECOND (20), BENCH_SOAK_TUNNEL_LOOPS (2 tunnel cycles at once),
 * BENCH_CLIENTS, BENCH_WORKERS (4 simulator processes), BENCH_CONNECT_CONCURRENCY, BENCH_CONNECT_TIMEOUT,
 * BENCH_MAX_HANDSHAKES, BENCH_SVCD_NODE_ARGS, BENCH_STRICT=1 (exit 1 when a target fails).
 */
import { readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient } from './support/api-client.js';
import { onCleanUp, runBench } from './support/bench-runner.js';
import { envNumber, HOST, startChild } from './support/child-processes.js';
import { loadSettings } from './support/load-settings.js';
import { probeNodeArgs, readLoopWindows } from './support/loop-delay-probe.js';
import { startLoadSetup } from './support/load-setup.js';
import {
  checksTable,
  loadAverage,
  machine,
  progress,
  table,
  writeResult,
  type Check,
} from './support/report.js';
import { API_USER } from './support/svcd-process.js';

const TARGETS = { maxGrowthPercent: 10, maxLoopDelayP99Ms: 50 };

const settings = loadSettings(2000);
const SECONDS = envNumber('BENCH_SOAK_SECONDS', 3600, 7 * 86_400);
const WARMUP_S = envNumber(
  'BENCH_SOAK_WARMUP_SECONDS',
  Math.min(300, Math.max(30, Math.round(SECONDS / 10))),
  86_400,
);
const SAMPLE_S = envNumber('BENCH_SOAK_SAMPLE_SECONDS', 10, 3600);
const CHURN_S = envNumber('BENCH_SOAK_CHURN_SECONDS', 30, 86_400);
const CHURN_PERCENT = envNumber('BENCH_SOAK_CHURN_PERCENT', 5, 100);
const JOBS_PER_S = envNumber('BENCH_SOAK_JOBS_PER_SECOND', 20, 1000);
const TUNNEL_LOOPS = envNumber('BENCH_SOAK_TUNNEL_LOOPS', 2, 64);
const MAX_JOBS_IN_FLIGHT = 64;

interface Sample {
  atS: number;
  rssKiB: number;
  fds: number;
  connected: number;
}

/** What the load did, by outcome. */
class Tally {
  readonly counts: Record<string, number> = {};
  add(what: string): void {
    this.counts[what] = (this.counts[what] ?? 0) + 1;
  }
}

const openFds = (pid: number | undefined): number => readdirSync(`/proc/${pid ?? 0}/fd`).length;

function pick<T>(items: readonly T[]): T {
  const item = items[Math.floor(Math.random() * items.length)];
  if (item === undefined) throw new Error('nothing to pick from');
  return item;
}

/** Every client id svcd knows, page by page. */
async function clientIds(api: ApiClient): Promise<string[]> {
  const ids: string[] = [];
  for (let offset = 0; ; offset += 500) {
    const page = await api.getJson<{ id: string }[]>(
      `/clients?fields[clients]=id&page[limit]=500&page[offset]=${offset}`,
    );
    ids.push(...page.data.map((c) => c.id));
    if (page.data.length < 500) return ids;
  }
}

/** One tunnel's life: open, send a few bytes through it (the simulated agent echoes them), close. */
async function tunnelCycle(api: ApiClient, id: string, tally: Tally): Promise<void> {
  const remotePort = 1024 + Math.floor(Math.random() * 60_000);
  const opened = await api.request('PUT', `/clients/${id}/tunnels?remote=127.0.0.1:${remotePort}&scheme=`);
  if (opened.status !== 200) return tally.add(`open ${opened.status}`);
  const tunnel = (JSON.parse(opened.body) as { data: { id: string; lport: string } }).data;
  const echoed = await new Promise<boolean>((resolve) => {
    const socket = connect(Number(tunnel.lport), HOST);
    let received = '';
    socket.setTimeout(10_000, () => socket.destroy());
    socket.on('connect', () => socket.write('soak'));
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString();
      if (received.length >= 4) socket.end();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(received === 'soak'));
  });
  tally.add(echoed ? 'echoed' : 'no echo');
  const closed = await api.request('DELETE', `/clients/${id}/tunnels/${tunnel.id}?force=true`);
  tally.add(`close ${closed.status}`);
}

/** Runs `step` again and again until `until`, each failure counted rather than fatal. */
async function loop(until: number, tally: Tally, step: () => Promise<void>): Promise<void> {
  while (Date.now() < until) {
    try {
      await step();
    } catch (err) {
      tally.add(`error ${err instanceof Error ? err.message.slice(0, 60) : String(err)}`);
      await sleep(200);
    }
  }
}

const meanOf = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / Math.max(1, values.length);
const growthPercent = (first: number[], last: number[]) =>
  ((meanOf(last) - meanOf(first)) / meanOf(first)) * 100;

async function main(): Promise<boolean> {
  const probeDir = await mkdtemp(join(tmpdir(), 'svc-soak-probe-'));
  onCleanUp(() => rm(probeDir, { recursive: true, force: true }));
  const probeFile = join(probeDir, 'loop-delay.jsonl');
  settings.svcdNodeArgs.push(...probeNodeArgs(probeFile));
  const idleProbeFile = join(probeDir, 'idle-loop-delay.jsonl');
  startChild(
    'idle probe',
    process.execPath,
    [...probeNodeArgs(idleProbeFile), '-e', 'setInterval(() => {}, 60_000)'],
    {
      cwd: probeDir,
    },
  );
  const { svcd, api, loadBefore, newFleet } = await startLoadSetup('soak', settings, 16);
  // Longer than the run, so that the token outlives it.
  await api.login(API_USER.name, API_USER.password, SECONDS + 3600);
  const fleet = newFleet();
  fleet.start();
  await fleet.waitAllConnected(settings.connectTimeoutS * 1000, () => undefined);
  const ids = await clientIds(api);
  progress(`${ids.length} clients connected; soaking for ${SECONDS} s (warm-up ${WARMUP_S} s)`);

  const started = Date.now();
  const until = started + SECONDS * 1000;
  const jobs = new Tally();
  const tunnels = new Tally();
  const churn = new Tally();
  const samples: Sample[] = [];

  let inFlight = 0;
  const jobTimer = setInterval(() => {
    if (inFlight >= MAX_JOBS_IN_FLIGHT) return jobs.add('skipped (in flight)');
    inFlight += 1;
    api
      .post(`/clients/${pick(ids)}/commands`, { command: '/usr/bin/true', timeout_sec: 60 })
      .then(
        (answer) => jobs.add(String(answer.status)),
        () => jobs.add('network error'),
      )
      .finally(() => (inFlight -= 1));
  }, 1000 / JOBS_PER_S);

  const sampleTimer = setInterval(() => {
    void api.getJson<{ clients_connected: number }>('/status').then(
      (status) =>
        samples.push({
          atS: Math.round((Date.now() - started) / 1000),
          rssKiB: svcd.rssKiB(),
          fds: openFds(svcd.pid),
          connected: status.data.clients_connected,
        }),
      () => undefined,
    );
  }, SAMPLE_S * 1000);

  const dropCount = Math.max(1, Math.round((ids.length * CHURN_PERCENT) / 100));
  const churnLoop = loop(until, churn, async () => {
    await sleep(Math.min(CHURN_S * 1000, Math.max(0, until - Date.now())));
    if (Date.now() >= until) return;
    fleet.dropLinks(dropCount);
    churn.add('links dropped');
    const last = samples.at(-1);
    progress(
      `${Math.round((Date.now() - started) / 1000)} s: dropped ${dropCount} links; RSS ${last?.rssKiB ?? '-'} KiB, ` +
        `fds ${last?.fds ?? '-'}, connected ${last?.connected ?? '-'}; load ${loadAverage()}`,
    );
  });
  await Promise.all([
    ...Array.from({ length: TUNNEL_LOOPS }, () =>
      loop(until, tunnels, () => tunnelCycle(api, pick(ids), tunnels)),
    ),
    churnLoop,
  ]);
  clearInterval(jobTimer);
  clearInterval(sampleTimer);
  while (inFlight > 0) await sleep(50);
  fleet.check();
  const fleetStats = fleet.stats();
  churn.counts['reconnects'] = fleetStats.connects - ids.length;
  churn.counts['connected at the end'] = fleetStats.connected;
  for (const [cause, n] of Object.entries(fleetStats.failures)) churn.counts[`failed attempts: ${cause}`] = n;

  const windows = readLoopWindows(probeFile);
  const idleWindows = readLoopWindows(idleProbeFile).filter(
    (w) => w.at >= started + WARMUP_S * 1000 && w.at <= until,
  );
  const idleP99 = idleWindows.map((w) => w.p99).sort((a, b) => a - b);
  const measured = samples.filter((s) => s.atS >= WARMUP_S);
  const measuredWindows = windows.filter((w) => w.at >= started + WARMUP_S * 1000 && w.at <= until);
  if (measured.length < 6) throw new Error(`only ${measured.length} samples after the warm-up; run longer`);
  const first = measured.slice(0, 3);
  const last = measured.slice(-3);
  const rssGrowth = growthPercent(
    first.map((s) => s.rssKiB),
    last.map((s) => s.rssKiB),
  );
  const fdGrowth = growthPercent(
    first.map((s) => s.fds),
    last.map((s) => s.fds),
  );
  const worstP99 = Math.max(...measuredWindows.map((w) => w.p99));
  const sortedP99 = measuredWindows.map((w) => w.p99).sort((a, b) => a - b);
  const medianP99 = sortedP99[Math.floor(sortedP99.length / 2)] ?? Number.NaN;

  const checks: Check[] = [
    {
      target: 'svcd RSS growth after warm-up',
      value: `${rssGrowth.toFixed(1)} % (${meanOf(first.map((s) => s.rssKiB)).toFixed(0)} → ${meanOf(last.map((s) => s.rssKiB)).toFixed(0)} KiB)`,
      limit: `±${TARGETS.maxGrowthPercent} %`,
      pass: Math.abs(rssGrowth) <= TARGETS.maxGrowthPercent,
    },
    {
      target: 'svcd open fds growth after warm-up',
      value: `${fdGrowth.toFixed(1)} % (${meanOf(first.map((s) => s.fds)).toFixed(0)} → ${meanOf(last.map((s) => s.fds)).toFixed(0)})`,
      limit: `±${TARGETS.maxGrowthPercent} %`,
      pass: Math.abs(fdGrowth) <= TARGETS.maxGrowthPercent,
    },
    {
      target: 'event-loop delay p99, worst 5 s window',
      value:
        `${worstP99.toFixed(1)} ms (median window ${medianP99.toFixed(1)} ms, ${measuredWindows.length} windows; ` +
        `idle node alongside: worst ${(idleP99.at(-1) ?? Number.NaN).toFixed(1)} ms, median ` +
        `${(idleP99[Math.floor(idleP99.length / 2)] ?? Number.NaN).toFixed(1)} ms)`,
      limit: `< ${TARGETS.maxLoopDelayP99Ms} ms`,
      pass: worstP99 < TARGETS.maxLoopDelayP99Ms,
    },
  ];
  const summary = {
    seconds: SECONDS,
    warmupSeconds: WARMUP_S,
    clients: ids.length,
    workers: settings.workers,
    churnSeconds: CHURN_S,
    churnPercent: CHURN_PERCENT,
    jobsPerSecond: JOBS_PER_S,
    jobs: jobs.counts,
    tunnels: tunnels.counts,
    churn: churn.counts,
    loadBefore,
    loadAfter: loadAverage(),
  };
  process.stdout.write(
    `\nSoak: ${ids.length} simulated agents, ${SECONDS} s (${WARMUP_S} s warm-up), load ${loadBefore} → ${loadAverage()}\n` +
      `jobs ${JSON.stringify(jobs.counts)}\ntunnels ${JSON.stringify(tunnels.counts)}\nchurn ${JSON.stringify(churn.counts)}\n\n` +
      table(
        ['t (s)', 'RSS (KiB)', 'fds', 'connected'],
        samples.map((s) => [String(s.atS), String(s.rssKiB), String(s.fds), String(s.connected)]),
      ) +
      `\n\n${checksTable(checks)}\n`,
  );
  const file = await writeResult('soak', {
    machine: machine(),
    summary,
    samples,
    idleLoopDelay: idleWindows,
    loopDelay: windows,
    checks,
  });
  progress(`result written to ${file}`);
  return checks.every((c) => c.pass);
}

await runBench(main, settings.strict);
