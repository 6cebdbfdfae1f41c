/**
 * Fan-out of one multi-client job (issue 14): BENCH_CLIENTS simulated svc agents (default 1,000, spread over
 * BENCH_WORKERS simulator processes; they run the agent's own link and result-sending code and answer `job.run`
 * with a built-in no-op whose result goes back in a `job.result` request, or with BENCH_JOB_RESULTS=channel on an
 * output channel as agents before that request did) are connected to one real svcd. Measured in the same run:
 *
 * 1. The raw round (reference): every simulated agent sends one control request (`ping`) on its link at one common
 *    start, and the round lasts until the last reply is in (the slowest worker). Median of BENCH_RUNS.
 * 2. The fan-out: POST /api/v1/commands {command: "noop", client_ids: [all], execute_concurrently: true}, then
 *    GET /commands/{jid}?fields[commands]=jid every BENCH_POLL_MS until meta.jobs counts every child as finished.
 *    Time from sending the POST to that answer; median of BENCH_RUNS (after one warm-up job that is not counted).
 * 3. svcd's RSS: idle (all clients connected, before any job), at the end of each job, and settled after the last
 *    job (median of the last 5 of BENCH_SETTLE_SECONDS one-second samples).
 *
 *   npm run build && npm run bench:fanout
 *   BENCH_CLIENTS=10000 npm run bench:fanout
 *
 * Environment: BENCH_CLIENTS (1000), BENCH_WORKERS (4), BENCH_RUNS (5), BENCH_POLL_MS (20), BENCH_SETTLE_SECONDS
 * (20), BENCH_CONNECT_CONCURRENCY (32), BENCH_CONNECT_TIMEOUT (900 s), BENCH_MAX_HANDSHAKES, BENCH_SVCD_NODE_ARGS
 * (extra node flags for svcd, e.g. --cpu-prof --cpu-prof-dir=/tmp/prof), BENCH_JOB_RESULTS=channel,
 * BENCH_STRICT=1 (exit 1 when a target fails).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient } from './support/api-client.js';
import { runBench } from './support/bench-runner.js';
import { envNumber } from './support/child-processes.js';
import { summarize } from './support/latency.js';
import { loadSettings } from './support/load-settings.js';
import { startLoadSetup, waitListed } from './support/load-setup.js';
import {
  checksTable,
  loadAverage,
  machine,
  progress,
  table,
  writeResult,
  type Check,
} from './support/report.js';
import type { FleetPingRound, FleetStats, SimulatorFleet } from './support/simulator-fleet.js';
import type { SvcdProcess } from './support/svcd-process.js';

const TARGETS = {
  /** Fan-out median at 1,000 clients, and at 10,000. */
  maxSecondsAt1000: 1,
  maxSecondsAt10000: 5,
  /** Fan-out median ≤ this × the raw round median. */
  maxRatio: 3,
  /** RSS after the jobs, settled, at most this much above idle: the larger of 10 % and 16 MiB. */
  rssToleranceShare: 0.1,
  rssToleranceKiB: 16 * 1024,
};

const SETTINGS = loadSettings(1_000);
const { clients: CLIENTS, workers: WORKERS } = SETTINGS;
const RUNS = envNumber('BENCH_RUNS', 5, 1_000);
const POLL_MS = envNumber('BENCH_POLL_MS', 20, 10_000);
const SETTLE_SECONDS = envNumber('BENCH_SETTLE_SECONDS', 20, 3600);
const JOB_TIMEOUT_MS = 120_000;
const SETTLED_SAMPLES = 5;

const median = (values: number[]) => summarize(values).p50;
const mib = (kib: number) => `${(kib / 1024).toFixed(1)} MiB`;
const ms = (value: number) => `${value.toFixed(0)} ms`;

interface StatusCounts {
  running: number;
  successful: number;
  failed: number;
  unknown: number;
}

interface FanoutRun {
  /** From sending the POST to the GET that counted every child finished. */
  ms: number;
  /** The POST alone (targets resolved, multi-job stored, run started in the background). */
  postMs: number;
  /** From sending the POST to the last ACK a simulated agent received (svcd stores before it acks). */
  lastAckMs: number;
  /** From sending the POST to the last `job.run` a simulated agent received: how long dispatching took. */
  lastJobRunMs: number;
  polls: number;
  rssEndKiB: number;
  cpuMs: number;
  /** CPU time of all simulator workers during the job. */
  simulatorCpuMs: number;
  counts: StatusCounts;
}

/** All client ids svcd lists as connected, 500 per page. */
async function connectedIds(api: ApiClient): Promise<string[]> {
  const ids: string[] = [];
  for (let offset = 0; ; offset += 500) {
    const page = await api.getJson<{ id: string }[]>(
      `/clients?filter[connection_state]=connected&fields[clients]=id&sort=id&page[limit]=500&page[offset]=${offset}`,
    );
    ids.push(...page.data.map((c) => c.id));
    if (page.data.length < 500) return ids;
  }
}

/** Waits until the workers' stats count `count` stored results (they report every 250 ms). */
async function waitAcked(fleet: SimulatorFleet, count: number): Promise<FleetStats> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const stats = fleet.stats();
    if (stats.resultsStored >= count) return stats;
    if (Date.now() > deadline)
      throw new Error(`the simulated agents received ${stats.resultsStored} ACKs, expected ${count}`);
    await sleep(50);
  }
}

async function fanout(
  api: ApiClient,
  svcd: SvcdProcess,
  fleet: SimulatorFleet,
  ids: string[],
): Promise<FanoutRun> {
  const ackedBefore = fleet.stats().resultsStored;
  const cpuBefore = svcd.cpuMs();
  const simulatorCpuBefore = fleet.cpuMs();
  const startedAt = Date.now();
  const started = performance.now();
  const post = await api.post('/commands', {
    command: 'noop',
    client_ids: ids,
    execute_concurrently: true,
    abort_on_error: false,
  });
  if (post.status !== 200) throw new Error(`POST /commands: HTTP ${post.status} ${post.body.slice(0, 300)}`);
  const jid = (JSON.parse(post.body) as { data: { jid: string } }).data.jid;
  let polls = 0;
  for (;;) {
    polls += 1;
    const answer = await api.get(`/commands/${jid}?fields[commands]=jid`);
    if (answer.status !== 200)
      throw new Error(`GET /commands/${jid}: HTTP ${answer.status} ${answer.body.slice(0, 300)}`);
    const counts = (JSON.parse(answer.body) as { meta: { jobs: StatusCounts } }).meta.jobs;
    if (counts.successful + counts.failed + counts.unknown === ids.length) {
      const elapsed = performance.now() - started;
      const rssEndKiB = svcd.rssKiB();
      const cpuMs = svcd.cpuMs() - cpuBefore;
      const simulatorCpuMs = fleet.cpuMs() - simulatorCpuBefore;
      if (counts.successful !== ids.length)
        throw new Error(`job ${jid}: not every child succeeded: ${JSON.stringify(counts)}`);
      const acked = await waitAcked(fleet, ackedBefore + ids.length);
      return {
        ms: elapsed,
        postMs: post.ms,
        lastAckMs: acked.lastResultAt - startedAt,
        lastJobRunMs: acked.lastJobAt - startedAt,
        polls,
        rssEndKiB,
        cpuMs,
        simulatorCpuMs,
        counts,
      };
    }
    if (performance.now() - started > JOB_TIMEOUT_MS)
      throw new Error(`job ${jid} not finished after ${JOB_TIMEOUT_MS} ms: ${JSON.stringify(counts)}`);
    await sleep(POLL_MS);
  }
}

/** One VmRSS sample per second for `seconds`. */
async function sampleRss(svcd: SvcdProcess, seconds: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < seconds; i++) {
    samples.push(svcd.rssKiB());
    await sleep(1_000);
  }
  return samples;
}

async function main(): Promise<boolean> {
  const { svcd, api, loadBefore, newFleet } = await startLoadSetup('fanout', SETTINGS, 1);
  const fleet = newFleet();
  const connectStart = performance.now();
  fleet.start();
  await fleet.waitAllConnected(SETTINGS.connectTimeoutS * 1000, (s) =>
    progress(`${s.connected}/${CLIENTS} connected; svcd RSS ${mib(svcd.rssKiB())}`),
  );
  await waitListed(api, CLIENTS);
  const ids = await connectedIds(api);
  if (ids.length !== CLIENTS)
    throw new Error(`svcd lists ${ids.length} connected clients, expected ${CLIENTS}`);
  progress(`all ${CLIENTS} connected in ${((performance.now() - connectStart) / 1000).toFixed(1)} s`);

  // The reference: one warm-up round, then RUNS measured ones.
  await fleet.pingRound();
  const rounds: FleetPingRound[] = [];
  for (let i = 0; i < RUNS; i++) {
    const round = await fleet.pingRound();
    if (round.sent !== CLIENTS || round.replied !== CLIENTS)
      throw new Error(`ping round: ${round.replied} of ${round.sent} replied (${CLIENTS} clients)`);
    rounds.push(round);
    progress(`raw round ${i + 1}/${RUNS}: ${ms(round.ms)}`);
    await sleep(200);
  }
  const roundMedian = median(rounds.map((r) => r.ms));

  const loadAtJobs = loadAverage();
  const rssIdleSamples = await sampleRss(svcd, SETTLED_SAMPLES);
  const rssIdle = median(rssIdleSamples);
  progress(`svcd RSS idle with ${CLIENTS} clients: ${mib(rssIdle)}; warm-up job`);
  const warmup = await fanout(api, svcd, fleet, ids);
  progress(`warm-up job: ${ms(warmup.ms)}`);
  const runs: FanoutRun[] = [];
  for (let i = 0; i < RUNS; i++) {
    await sleep(1_000);
    const run = await fanout(api, svcd, fleet, ids);
    runs.push(run);
    progress(
      `job ${i + 1}/${RUNS}: ${ms(run.ms)} (last job.run ${ms(run.lastJobRunMs)}, last ACK ${ms(run.lastAckMs)}, POST ${ms(run.postMs)}, ` +
        `svcd CPU ${ms(run.cpuMs)}, simulators' CPU ${ms(run.simulatorCpuMs)}, RSS ${mib(run.rssEndKiB)})`,
    );
  }
  const fanoutMedian = median(runs.map((r) => r.ms));
  progress(`sampling svcd RSS for ${SETTLE_SECONDS} s after the jobs`);
  const rssAfterSamples = await sampleRss(svcd, SETTLE_SECONDS);
  const rssAfter = median(rssAfterSamples.slice(-SETTLED_SAMPLES));
  const rssEndMax = Math.max(...runs.map((r) => r.rssEndKiB));
  const final = fleet.stats();
  fleet.check();

  const limitSeconds = CLIENTS <= 1_000 ? TARGETS.maxSecondsAt1000 : TARGETS.maxSecondsAt10000;
  const rssLimit = rssIdle + Math.max(rssIdle * TARGETS.rssToleranceShare, TARGETS.rssToleranceKiB);
  const ratio = fanoutMedian / roundMedian;
  const checks: Check[] = [
    {
      target: `fan-out to ${CLIENTS} clients, median of ${RUNS}`,
      value: ms(fanoutMedian),
      limit: `<= ${limitSeconds} s`,
      pass: fanoutMedian <= limitSeconds * 1000,
    },
    {
      target: 'fan-out / raw round (medians)',
      value: `${ratio.toFixed(2)} ×`,
      limit: `<= ${TARGETS.maxRatio} ×`,
      pass: ratio <= TARGETS.maxRatio,
    },
    {
      target: 'svcd RSS settled after the jobs vs idle',
      value: `${mib(rssAfter)} (idle ${mib(rssIdle)})`,
      limit: `<= ${mib(rssLimit)}`,
      pass: rssAfter <= rssLimit,
    },
  ];
  const out = [
    '',
    `Fan-out: one concurrent multi-client job to ${CLIENTS} simulated agents in ${WORKERS} processes, one svcd ` +
      `(load average before ${loadBefore}, at the jobs ${loadAtJobs}, after ${loadAverage()})`,
    '',
    table(
      ['figure', 'value'],
      [
        [
          `raw round (ping on every link) median / min / max of ${RUNS}`,
          [roundMedian, ...[Math.min, Math.max].map((f) => f(...rounds.map((r) => r.ms)))]
            .map(ms)
            .join(' / '),
        ],
        [
          `fan-out POST → all stored, median / min / max of ${RUNS}`,
          [fanoutMedian, ...[Math.min, Math.max].map((f) => f(...runs.map((r) => r.ms)))].map(ms).join(' / '),
        ],
        ['fan-out POST → last job.run at an agent, median', ms(median(runs.map((r) => r.lastJobRunMs)))],
        ['fan-out POST → last ACK at an agent, median', ms(median(runs.map((r) => r.lastAckMs)))],
        ['POST /commands alone, median', ms(median(runs.map((r) => r.postMs)))],
        ['warm-up job (not counted)', ms(warmup.ms)],
        [`status polls per job (every ${POLL_MS} ms), median`, String(median(runs.map((r) => r.polls)))],
        ['svcd CPU per job, median', ms(median(runs.map((r) => r.cpuMs)))],
        ["simulators' CPU per job (all workers), median", ms(median(runs.map((r) => r.simulatorCpuMs)))],
        ['svcd RSS idle (all connected, before any job)', mib(rssIdle)],
        ['svcd RSS at the end of a job, max', mib(rssEndMax)],
        [`svcd RSS settled (median of the last 5 of ${SETTLE_SECONDS} s)`, mib(rssAfter)],
        [
          'results acknowledged / not stored at the agents',
          `${final.resultsStored} / ${final.resultsNotStored}`,
        ],
        ['links lost during the run (should be 0)', String(final.disconnects)],
      ],
    ),
    '',
    checksTable(checks),
    '',
  ];
  const file = await writeResult('fanout', {
    date: new Date().toISOString(),
    settings: { ...SETTINGS, runs: RUNS, pollMs: POLL_MS, settleSeconds: SETTLE_SECONDS },
    machine: machine(),
    targets: TARGETS,
    checks,
    figures: { roundMedian, fanoutMedian, ratio, rssIdle, rssEndMax, rssAfter, warmup, runs, rounds },
    rssSamplesKiB: { idle: rssIdleSamples, after: rssAfterSamples },
    fleet: final,
  });
  out.push(`results written to ${file}`, '');
  process.stdout.write(out.join('\n'));
  return checks.every((c) => c.pass);
}

await runBench(main, SETTINGS.strict);
