/**
 * Schedules (issue 27): BENCH_SCHEDULES schedules (default 1,000), all due in the same minute, in the embedded
 * SQLite of one real svcd, each running `/usr/bin/true` on one real svc agent. Target: every schedule fired within
 * 5 s of the minute (its run's started_at, as GET /commands lists it), each exactly once.
 *
 *   npm run build && npm run bench:schedules
 *
 * Environment: BENCH_SCHEDULES (1000), BENCH_SEED_CONCURRENCY (8 POSTs in flight while creating them),
 * BENCH_STRICT=1 (exit 1 when a target fails).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { ApiClient } from './support/api-client.js';
import { onCleanUp, runBench } from './support/bench-runner.js';
import { envNumber, HOST, startChild } from './support/child-processes.js';
import { checksTable, loadAverage, machine, progress, table, writeResult } from './support/report.js';
import { API_USER, CLIENT_AUTH, SvcdProcess } from './support/svcd-process.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SVC_BIN = join(ROOT, 'packages/agent/bin/svc.js');
const AGENT_ID = 'bench-schedules';
const SCHEDULES = Math.round(envNumber('BENCH_SCHEDULES', 1_000, 100_000));
const SEED_CONCURRENCY = Math.round(envNumber('BENCH_SEED_CONCURRENCY', 8, 256));
const STRICT = process.env['BENCH_STRICT'] === '1';
const TARGET_MS = 5_000;
const MINUTE = 60_000;
/** The minute all schedules name is at least this far ahead when creating them starts. */
const LEAD_MS = 45_000;

async function startAgent(workDir: string, svcd: SvcdProcess, fingerprint: string): Promise<void> {
  const conf = join(workDir, 'svc.conf');
  await writeFile(
    conf,
    [
      '[client]',
      `server = "http://${HOST}:${svcd.agentPort}"`,
      `auth = "${CLIENT_AUTH.id}:${CLIENT_AUTH.password}"`,
      `id = "${AGENT_ID}"`,
      `fingerprint = "${fingerprint}"`,
      `data_dir = "${join(workDir, 'svc-data')}"`,
      '[logging]',
      'log_level = "warn"',
    ].join('\n'),
  );
  startChild('svc agent', process.execPath, [SVC_BIN, '-c', conf], { cwd: workDir });
}

async function waitConnected(api: ApiClient): Promise<void> {
  for (let tries = 0; ; tries++) {
    const answer = await api.get(`/clients/${AGENT_ID}`);
    if (answer.status === 200 && answer.body.includes('"connection_state":"connected"')) return;
    if (tries > 300) throw new Error('the agent did not connect within 30 s');
    await sleep(100);
  }
}

/** Creates the schedules, all naming the UTC minute `at`; returns how long it took. */
async function seed(api: ApiClient, at: Date): Promise<number> {
  const started = performance.now();
  const cron = `${at.getUTCMinutes()} ${at.getUTCHours()} ${at.getUTCDate()} ${at.getUTCMonth() + 1} *`;
  let next = 0;
  const worker = async () => {
    while (next < SCHEDULES) {
      const i = next++;
      const answer = await api.request('POST', '/schedules', {
        name: `bench-${String(i).padStart(6, '0')}`,
        schedule: cron,
        type: 'command',
        command: '/usr/bin/true',
        client_ids: [AGENT_ID],
      });
      if (answer.status !== 201)
        throw new Error(`POST /schedules #${i}: HTTP ${answer.status} ${answer.body.slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: SEED_CONCURRENCY }, worker));
  return (performance.now() - started) / 1000;
}

interface RunRow {
  jid: string;
  schedule_id?: string;
  started_at: string;
}

async function main(): Promise<boolean> {
  const workDir = await mkdtemp(join(tmpdir(), 'svc-bench-schedules-'));
  onCleanUp(() => rm(workDir, { recursive: true, force: true }));
  const svcd = new SvcdProcess({ workDir, maxHandshakes: 0, nodeArgs: [] });
  await svcd.start();
  const api = new ApiClient(svcd.apiBase, SEED_CONCURRENCY);
  onCleanUp(() => api.close());
  await api.login(API_USER.name, API_USER.password);
  const { data: status } = await api.getJson<{ fingerprint: string }>('/status');
  await startAgent(workDir, svcd, status.fingerprint);
  await waitConnected(api);

  const minute = new Date(Math.ceil((Date.now() + LEAD_MS) / MINUTE) * MINUTE);
  progress(`agent connected; creating ${SCHEDULES} schedules due at ${minute.toISOString()}`);
  const seedSeconds = await seed(api, minute);
  if (Date.now() > minute.getTime() - 2_000)
    throw new Error(`creating the schedules took ${seedSeconds.toFixed(1)} s, past the minute they name`);
  progress(`created in ${seedSeconds.toFixed(1)} s; waiting for ${minute.toISOString()}`);

  // Every run the minute started, once all are there or 30 s after the minute.
  let runs: RunRow[] = [];
  while (Date.now() < minute.getTime() + 30_000) {
    await sleep(500);
    if (Date.now() < minute.getTime()) continue;
    if (!svcd.child?.running) throw new Error(`svcd exited: ${svcd.child?.tail() ?? ''}`);
    const answer = await api
      .getJson<RunRow[]>(
        '/commands?page[limit]=1000&sort=-started_at&fields[commands]=jid,schedule_id,started_at',
      )
      .catch((err: unknown) => {
        // A keep-alive connection svcd closed while the bench waited for the minute: ask again.
        progress(`GET /commands: ${String(err)}; asking again`);
        return undefined;
      });
    if (!answer) continue;
    const { data } = answer;
    runs = data.filter((r) => r.schedule_id !== undefined && Date.parse(r.started_at) >= minute.getTime());
    if (runs.length >= SCHEDULES) break;
  }
  const load = loadAverage();
  const perSchedule = new Map<string, number>();
  for (const r of runs) perSchedule.set(r.schedule_id!, (perSchedule.get(r.schedule_id!) ?? 0) + 1);
  const twice = [...perSchedule.values()].filter((n) => n > 1).length;
  const delays = runs.map((r) => Date.parse(r.started_at) - minute.getTime()).sort((a, b) => a - b);
  const last = delays.at(-1) ?? Number.NaN;
  const first = delays[0] ?? Number.NaN;
  const median = delays[Math.floor(delays.length / 2)] ?? Number.NaN;

  const checks = [
    {
      target: `all ${SCHEDULES} fired within ${TARGET_MS / 1000} s of the minute`,
      value: `${perSchedule.size} fired; last ${last} ms after it`,
      limit: `≤ ${TARGET_MS} ms`,
      pass: perSchedule.size === SCHEDULES && last <= TARGET_MS,
    },
    {
      target: 'each exactly once',
      value: `${twice} twice, ${runs.length} runs`,
      limit: '0 twice',
      pass: twice === 0 && runs.length === SCHEDULES,
    },
  ];
  console.log(
    table(
      ['schedules', 'created in', 'first run', 'median', 'last run', 'load average'],
      [[String(SCHEDULES), `${seedSeconds.toFixed(1)} s`, `${first} ms`, `${median} ms`, `${last} ms`, load]],
    ),
  );
  console.log(checksTable(checks));
  await writeResult('schedules', {
    machine: machine(),
    load,
    schedules: SCHEDULES,
    seedSeconds,
    firstMs: first,
    medianMs: median,
    lastMs: last,
    fired: perSchedule.size,
    twice,
    checks,
  });
  return checks.every((c) => c.pass);
}

await runBench(main, STRICT);
