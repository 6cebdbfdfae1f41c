/**
 * What redacting a run's secret costs (issue 27 §4): the fan-out of one multi-client job to BENCH_CLIENTS simulated
 * svc agents (as bench:fanout) whose `env` holds one variable, printed four times by every agent (about 1 KiB of
 * output each). Measured in the same run, alternating: the variable as a plain value, and the same-length value as
 * a vault reference, which svcd resolves at dispatch, the agent code redacts before sending and svcd scans again.
 * Figures: median fan-out time (POST → every child stored) and svcd's CPU per job of each; target: the secret run
 * costs at most 10 % more than the plain one.
 *
 *   npm run build && npm run bench:redaction
 *   BENCH_CLIENTS=200 BENCH_RUNS=2 npm run bench:redaction   (a small run that only proves it works)
 *
 * Environment: BENCH_CLIENTS (1000), BENCH_WORKERS (4), BENCH_RUNS (5), BENCH_POLL_MS (20), BENCH_CONNECT_*,
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
import type { SvcdProcess } from './support/svcd-process.js';

const TARGETS = { maxExtraShare: 0.1 };
const SETTINGS = loadSettings(1_000);
const { clients: CLIENTS, workers: WORKERS } = SETTINGS;
const RUNS = envNumber('BENCH_RUNS', 5, 1_000);
const POLL_MS = envNumber('BENCH_POLL_MS', 20, 10_000);
const JOB_TIMEOUT_MS = 120_000;
const SECRET = 'bench-Secret-' + 'k3y'.repeat(8);
const PLAIN = 'bench-plain0-' + 'v4l'.repeat(8);
const REDACTED = '[redacted:bench-secret]';

const median = (values: number[]) => summarize(values).p50;
const ms = (value: number) => `${value.toFixed(0)} ms`;

interface Job {
  ms: number;
  cpuMs: number;
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

async function fanout(
  api: ApiClient,
  svcd: SvcdProcess,
  ids: string[],
  value: unknown,
): Promise<{ job: Job; jid: string }> {
  const cpuBefore = svcd.cpuMs();
  const started = performance.now();
  const post = await api.post('/commands', {
    command: 'noop',
    client_ids: ids,
    execute_concurrently: true,
    abort_on_error: false,
    env: { BENCH_VALUE: value },
  });
  if (post.status !== 200) throw new Error(`POST /commands: HTTP ${post.status} ${post.body.slice(0, 300)}`);
  const jid = (JSON.parse(post.body) as { data: { jid: string } }).data.jid;
  for (;;) {
    const answer = await api.get(`/commands/${jid}?fields[commands]=jid`);
    if (answer.status !== 200) throw new Error(`GET /commands/${jid}: HTTP ${answer.status}`);
    const counts = (JSON.parse(answer.body) as { meta: { jobs: Record<string, number> } }).meta.jobs;
    const done = (counts['successful'] ?? 0) + (counts['failed'] ?? 0) + (counts['unknown'] ?? 0);
    if (done === ids.length) {
      if (counts['successful'] !== ids.length) throw new Error(`job ${jid}: ${JSON.stringify(counts)}`);
      return { job: { ms: performance.now() - started, cpuMs: svcd.cpuMs() - cpuBefore }, jid };
    }
    if (performance.now() - started > JOB_TIMEOUT_MS) throw new Error(`job ${jid} not finished in time`);
    await sleep(POLL_MS);
  }
}

/** One child's stored output, to prove the secret run was redacted (and the plain one was not). */
async function firstOutput(api: ApiClient, jid: string): Promise<string> {
  const page = await api.getJson<{ result: { stdout: string } }[]>(`/commands/${jid}/jobs?page[limit]=1`);
  return page.data[0]?.result.stdout ?? '';
}

async function main(): Promise<boolean> {
  const { svcd, api, loadBefore, newFleet } = await startLoadSetup('redaction', SETTINGS, 1);
  const fleet = newFleet();
  fleet.start();
  await fleet.waitAllConnected(SETTINGS.connectTimeoutS * 1000, (s) =>
    progress(`${s.connected}/${CLIENTS} connected`),
  );
  await waitListed(api, CLIENTS);
  const ids = await connectedIds(api);
  if (ids.length !== CLIENTS)
    throw new Error(`svcd lists ${ids.length} connected clients, expected ${CLIENTS}`);

  const init = await api.post('/vault-admin/init', { password: 'bench-vault-1' });
  if (init.status !== 201) throw new Error(`vault init: HTTP ${init.status} ${init.body.slice(0, 200)}`);
  const entry = await api.post('/vault', { key: 'bench-secret', value: SECRET, type: 'secret' });
  if (entry.status !== 201) throw new Error(`vault entry: HTTP ${entry.status} ${entry.body.slice(0, 200)}`);

  const secretRef = { vault: 'bench-secret' };
  progress('warm-up: one job of each');
  const warmPlain = await fanout(api, svcd, ids, PLAIN);
  const warmSecret = await fanout(api, svcd, ids, secretRef);
  const plainOut = await firstOutput(api, warmPlain.jid);
  const secretOut = await firstOutput(api, warmSecret.jid);
  if (!plainOut.includes(PLAIN)) throw new Error('the plain run did not print its value');
  if (secretOut.includes(SECRET) || secretOut.split(REDACTED).length !== 5)
    throw new Error(`the secret run's output is not redacted four times: ${secretOut.slice(0, 200)}`);

  const plain: Job[] = [];
  const secret: Job[] = [];
  for (let i = 0; i < RUNS; i++) {
    // Alternating, so both kinds see the same machine.
    for (const [list, value, name] of [
      [plain, PLAIN, 'plain'],
      [secret, secretRef, 'secret'],
    ] as const) {
      await sleep(500);
      const { job } = await fanout(api, svcd, ids, value);
      list.push(job);
      progress(`${name} ${i + 1}/${RUNS}: ${ms(job.ms)}, svcd CPU ${ms(job.cpuMs)}`);
    }
  }
  fleet.check();
  const plainMs = median(plain.map((j) => j.ms));
  const secretMs = median(secret.map((j) => j.ms));
  const extra = secretMs / plainMs - 1;
  const checks: Check[] = [
    {
      target: `fan-out to ${CLIENTS} clients with one secret vs a plain value (medians of ${RUNS})`,
      value: `${(extra * 100).toFixed(1)} %`,
      limit: `<= ${TARGETS.maxExtraShare * 100} %`,
      pass: extra <= TARGETS.maxExtraShare,
    },
  ];
  const out = [
    '',
    `Redaction: one concurrent job to ${CLIENTS} simulated agents in ${WORKERS} processes, ~1 KiB of output each ` +
      `holding the value 4 times (load average before ${loadBefore}, after ${loadAverage()})`,
    '',
    table(
      ['figure', 'plain value', 'vault secret (redacted)'],
      [
        [`fan-out POST → all stored, median of ${RUNS}`, ms(plainMs), ms(secretMs)],
        [
          'svcd CPU per job, median',
          ms(median(plain.map((j) => j.cpuMs))),
          ms(median(secret.map((j) => j.cpuMs))),
        ],
      ],
    ),
    '',
    checksTable(checks),
    '',
  ];
  const file = await writeResult('redaction', {
    date: new Date().toISOString(),
    settings: { ...SETTINGS, runs: RUNS, pollMs: POLL_MS },
    machine: machine(),
    targets: TARGETS,
    checks,
    figures: { plainMs, secretMs, extra, plain, secret },
  });
  out.push(`results written to ${file}`, '');
  process.stdout.write(out.join('\n'));
  return checks.every((c) => c.pass);
}

await runBench(main, SETTINGS.strict);
