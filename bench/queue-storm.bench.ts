/**
 * Queued jobs in a reconnect storm (issue 27 §1): BENCH_CLIENTS simulated agents (default 10,000) connect once so
 * svcd knows them, then all go away; one concurrent run with `queue_ttl` on every one of them leaves a `queued`
 * child per client. Then every client comes back at once (a fresh simulator fleet with a high first-attempt
 * concurrency, as after a network or svcd outage). Reports when the last client was back, when every queued job
 * had been delivered and finished (the simulator answers job.run with a no-op and sends an empty successful
 * result, as the agent does), and GET /api/v1/status latency probed at BENCH_PROBE_RATE meanwhile.
 *
 *   npm run build && npm run bench:queue-storm
 *
 * Environment: BENCH_CLIENTS (10000), BENCH_WORKERS (4), BENCH_CONNECT_CONCURRENCY (32, the build-up),
 * BENCH_STORM_CONCURRENCY (2000 first attempts in flight in the storm), BENCH_PROBE_RATE (20 req/s),
 * BENCH_STORM_TIMEOUT (300 s), BENCH_STRICT=1.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { runBench, onCleanUp } from './support/bench-runner.js';
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
import { SimulatorFleet } from './support/simulator-fleet.js';
import { CLIENT_AUTH } from './support/svcd-process.js';

const TARGETS = { maxFinishedAfterLastBackSeconds: 15, maxStatusP99Ms: 50 };
const SETTINGS = loadSettings(10_000);
const { clients: CLIENTS, workers: WORKERS } = SETTINGS;
const STORM_CONCURRENCY = envNumber('BENCH_STORM_CONCURRENCY', 2_000, 100_000);
const PROBE_RATE = envNumber('BENCH_PROBE_RATE', 20, 1_000);
const STORM_TIMEOUT_S = envNumber('BENCH_STORM_TIMEOUT', 300, 86_400);

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

type Counts = Record<string, number>;

async function counts(api: Awaited<ReturnType<typeof startLoadSetup>>['api'], jid: string): Promise<Counts> {
  const res = await api.get(`/commands/${jid}?fields[commands]=jid`);
  if (res.status !== 200) throw new Error(`GET /commands/${jid}: ${res.status} ${res.body}`);
  return (JSON.parse(res.body) as { meta: { jobs: Counts } }).meta.jobs;
}

async function main(): Promise<boolean> {
  const { svcd, api, loadBefore, newFleet } = await startLoadSetup('queue-storm', SETTINGS, 8);

  const first = newFleet();
  first.start();
  await first.waitAllConnected(SETTINGS.connectTimeoutS * 1000, (s) =>
    progress(`building up: ${s.connected}/${CLIENTS} connected, ${s.handshaking} handshaking`),
  );
  await waitListed(api, CLIENTS);
  const ids: string[] = [];
  while (ids.length < CLIENTS) {
    const page = await api.getJson<{ id: string }[]>(
      `/clients?fields[clients]=id&page[limit]=500&page[offset]=${ids.length}&sort=id`,
    );
    if (page.data.length === 0) break;
    ids.push(...page.data.map((c) => c.id));
  }
  progress(`all ${CLIENTS} known; every client goes away`);
  await first.stop();
  await waitListed(api, 0);

  const queuedAt = Date.now();
  const started = await api.post('/commands', {
    command: 'true',
    client_ids: ids,
    execute_concurrently: true,
    queue_ttl: '1h',
  });
  if (started.status !== 200) throw new Error(`POST /commands: ${started.status} ${started.body}`);
  const jid = (JSON.parse(started.body) as { data: { jid: string } }).data.jid;
  for (;;) {
    if ((await counts(api, jid)).queued === CLIENTS) break;
    await sleep(200);
  }
  const queueMs = Date.now() - queuedAt;
  progress(`${CLIENTS} jobs queued in ${seconds(queueMs)}; every client comes back at once`);

  const storm = new SimulatorFleet({
    url: svcd.agentUrl,
    authId: CLIENT_AUTH.id,
    password: CLIENT_AUTH.password,
    fingerprint: (await api.getJson<{ fingerprint: string }>('/status')).data.fingerprint,
    clients: CLIENTS,
    workers: WORKERS,
    startConcurrency: STORM_CONCURRENCY,
  });
  onCleanUp(() => storm.stop());
  const probe = new RateProbe(api, '/status', PROBE_RATE);
  const stormAt = Date.now();
  probe.start();
  storm.start();
  let allBackAt: number | undefined;
  let finishedAt: number | undefined;
  let last: Counts = {};
  let nextProgress = 0;
  try {
    while (Date.now() - stormAt < STORM_TIMEOUT_S * 1000) {
      storm.check();
      const stats = storm.stats();
      if (allBackAt === undefined && stats.reporting === stats.workers && stats.connected === CLIENTS)
        allBackAt = stats.lastConnectAt;
      last = await counts(api, jid);
      if (Date.now() >= nextProgress) {
        progress(
          `t+${seconds(Date.now() - stormAt)}: ${stats.connected}/${CLIENTS} back; jobs ${JSON.stringify(last)}`,
        );
        nextProgress = Date.now() + 2_000;
      }
      if (last.successful === CLIENTS) {
        finishedAt = Date.now();
        break;
      }
      await sleep(100);
    }
  } finally {
    await probe.stop();
  }
  // Worker stats come every second or so: the jobs may be seen finished before the last connect is reported.
  for (let waited = 0; allBackAt === undefined && waited < 10_000; waited += 100) {
    storm.check();
    const stats = storm.stats();
    if (stats.reporting === stats.workers && stats.connected === CLIENTS) allBackAt = stats.lastConnectAt;
    else await sleep(100);
  }
  const latency = summarize(probe.samples.map((s) => s.ms));
  const failedProbes = probe.samples.filter((s) => s.status !== 200).length;
  const afterLastBack =
    finishedAt !== undefined && allBackAt !== undefined ? Math.max(0, finishedAt - allBackAt) : undefined;
  const checks: Check[] = [
    {
      target: `all ${CLIENTS} queued jobs delivered and finished after the last client is back`,
      value: afterLastBack === undefined ? `no: ${JSON.stringify(last)}` : seconds(afterLastBack),
      limit: `<= ${TARGETS.maxFinishedAfterLastBackSeconds} s`,
      pass: afterLastBack !== undefined && afterLastBack <= TARGETS.maxFinishedAfterLastBackSeconds * 1000,
    },
    {
      target: `GET /status p99 during the storm (${PROBE_RATE} req/s)`,
      value: `${latency.p99.toFixed(1)} ms${failedProbes ? `, ${failedProbes} failed` : ''}`,
      limit: `<= ${TARGETS.maxStatusP99Ms} ms, none failed`,
      pass: latency.p99 <= TARGETS.maxStatusP99Ms && failedProbes === 0 && latency.count > 0,
    },
  ];
  const figures = {
    clients: CLIENTS,
    workers: WORKERS,
    stormConcurrency: STORM_CONCURRENCY,
    queueMs,
    allBackMs: allBackAt === undefined ? undefined : allBackAt - stormAt,
    finishedMs: finishedAt === undefined ? undefined : finishedAt - stormAt,
    finishedAfterLastBackMs: afterLastBack,
    counts: last,
    svcdCpuMs: svcd.cpuMs(),
    svcdRssKiB: svcd.rssKiB(),
    statusProbe: { ...latency, failed: failedProbes, skipped: probe.skipped, rate: PROBE_RATE },
  };
  const out = [
    '',
    `Queued jobs in a reconnect storm: ${CLIENTS} simulated agents in ${WORKERS} processes ` +
      `(load average before ${loadBefore}, after ${loadAverage()})`,
    '',
    table(
      ['figure', 'value'],
      [
        ['queueing the run (one queued child per client)', seconds(queueMs)],
        [
          'last client back after the storm began',
          figures.allBackMs === undefined ? 'not all' : seconds(figures.allBackMs),
        ],
        [
          'all jobs finished after the storm began',
          figures.finishedMs === undefined ? 'no' : seconds(figures.finishedMs),
        ],
        [
          'all jobs finished after the last client was back',
          afterLastBack === undefined ? 'no' : seconds(afterLastBack),
        ],
        [
          `GET /status at ${PROBE_RATE} req/s: p50 / p90 / p99 / max`,
          [latency.p50, latency.p90, latency.p99, latency.max].map((v) => v.toFixed(1)).join(' / ') + ' ms',
        ],
        ['svcd CPU over the whole bench', seconds(figures.svcdCpuMs)],
      ],
    ),
    '',
    checksTable(checks),
    '',
  ];
  const file = await writeResult('queue-storm', {
    date: new Date().toISOString(),
    settings: { ...SETTINGS, stormConcurrency: STORM_CONCURRENCY, probeRate: PROBE_RATE },
    machine: machine(),
    targets: TARGETS,
    checks,
    figures,
    probeSamples: probe.samples,
  });
  out.push(`results written to ${file}`, '');
  process.stdout.write(out.join('\n'));
  return checks.every((c) => c.pass);
}

await runBench(main, SETTINGS.strict);
