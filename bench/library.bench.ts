/**
 * Script library (issue 15): BENCH_SCRIPTS library scripts (default 10,000) in the embedded SQLite of one real
 * svcd, then GET /api/v1/library/scripts with one page of 50, a wildcard filter and a sort:
 * `?page[limit]=50&filter[name]=*5*&sort=-created_at`. The target is the p99 of sequential requests (one client,
 * Bearer, keep-alive); autocannon then drives BENCH_CONNECTIONS connections for BENCH_SECONDS to show the
 * throughput and the latency under concurrent load.
 *
 *   npm run build && npm run bench:library
 *
 * Environment: BENCH_SCRIPTS (10000), BENCH_REQUESTS (1000 sequential), BENCH_SECONDS (10), BENCH_CONNECTIONS (8),
 * BENCH_SEED_CONCURRENCY (8 POSTs in flight while seeding), BENCH_SVCD_NODE_ARGS (extra node flags for svcd),
 * BENCH_STRICT=1 (exit 1 when a target fails).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { ApiClient } from './support/api-client.js';
import { onCleanUp, runBench } from './support/bench-runner.js';
import { envNumber } from './support/child-processes.js';
import { sequentialLatencies, summarize } from './support/latency.js';
import {
  checksTable,
  loadAverage,
  machine,
  progress,
  table,
  writeResult,
  type Check,
} from './support/report.js';
import { API_USER, SvcdProcess } from './support/svcd-process.js';

const TARGETS = { maxListP99Ms: 20 };

const SCRIPTS = envNumber('BENCH_SCRIPTS', 10_000, 1_000_000);
const REQUESTS = envNumber('BENCH_REQUESTS', 1_000, 1_000_000);
const SECONDS = envNumber('BENCH_SECONDS', 10, 3600);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 8, 1_000);
const SEED_CONCURRENCY = envNumber('BENCH_SEED_CONCURRENCY', 8, 256);
const SVCD_NODE_ARGS = (process.env['BENCH_SVCD_NODE_ARGS'] ?? '').split(/\s+/).filter(Boolean);
const STRICT = process.env['BENCH_STRICT'] === '1';

const PAGE = 50;
const LIST_PATH = `/library/scripts?page[limit]=${PAGE}&filter[name]=*5*&sort=-created_at`;
const WARMUP_REQUESTS = 100;

const scriptName = (i: number) => `maintenance-${String(i).padStart(6, '0')}`;
const scriptBody = (i: number) => ({
  name: scriptName(i),
  interpreter: i % 3 === 0 ? 'bash' : '',
  is_sudo: i % 7 === 0,
  cwd: i % 2 === 0 ? '/var/tmp' : '',
  script: `#!/bin/sh\n# maintenance task ${i}\nset -eu\ndf -h /\nfind /var/tmp -mtime +${i % 30} -type f -print\n`,
});

/** POSTs BENCH_SCRIPTS scripts with at most BENCH_SEED_CONCURRENCY in flight; every one must answer 201. */
async function seed(api: ApiClient): Promise<number> {
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < SCRIPTS) {
      const i = next++;
      const answer = await api.post('/library/scripts', scriptBody(i));
      if (answer.status !== 201)
        throw new Error(`POST /library/scripts #${i}: HTTP ${answer.status} ${answer.body.slice(0, 300)}`);
      if (i > 0 && i % 2_000 === 0) progress(`${i} scripts stored`);
    }
  };
  await Promise.all(Array.from({ length: SEED_CONCURRENCY }, worker));
  return (performance.now() - started) / 1000;
}

/** The answer must be the page the query asks for: 50 names with a 5, newest first, and the right count. */
async function checkAnswer(api: ApiClient): Promise<number> {
  const expected = Array.from({ length: SCRIPTS }, (_, i) => scriptName(i)).filter((n) => n.includes('5'));
  const body = await api.getJson<{ name: string; created_at: string }[]>(LIST_PATH);
  const times = body.data.map((s) => Date.parse(s.created_at));
  const problems = [
    body.meta?.count === expected.length
      ? ''
      : `meta.count ${body.meta?.count} instead of ${expected.length}`,
    body.data.length === Math.min(PAGE, expected.length) ? '' : `${body.data.length} scripts on the page`,
    body.data.every((s) => s.name.includes('5')) ? '' : 'a name without 5',
    times.every((t, i) => i === 0 || t <= (times[i - 1] ?? t)) ? '' : 'not newest first',
  ].filter(Boolean);
  if (problems.length > 0) throw new Error(`GET ${LIST_PATH}: ${problems.join('; ')}`);
  return expected.length;
}

function autocannonRun(url: string, headers: Record<string, string>): Promise<autocannon.Result> {
  const guardMs = (SECONDS + 30) * 1000;
  return new Promise((resolve, reject) => {
    const handle: { instance?: autocannon.Instance } = {};
    const timer = setTimeout(() => {
      handle.instance?.stop();
      reject(new Error(`autocannon did not finish within ${guardMs} ms`));
    }, guardMs);
    handle.instance = autocannon(
      { url, headers, connections: CONNECTIONS, duration: SECONDS, timeout: 10 },
      (err, result) => {
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(result);
      },
    );
  });
}

async function main(): Promise<boolean> {
  const loadBefore = loadAverage();
  const workDir = await mkdtemp(join(tmpdir(), 'svc-library-bench-'));
  onCleanUp(() => rm(workDir, { recursive: true, force: true }));
  const svcd = new SvcdProcess({ workDir, maxHandshakes: 0, nodeArgs: SVCD_NODE_ARGS });
  onCleanUp(() => svcd.stop());
  await svcd.start();
  const api = new ApiClient(svcd.apiBase, SEED_CONCURRENCY);
  onCleanUp(() => api.close());
  await api.login(API_USER.name, API_USER.password);
  progress(`svcd at ${svcd.apiBase} (embedded SQLite); load average ${loadBefore}`);

  progress(`storing ${SCRIPTS} scripts through POST /library/scripts, ${SEED_CONCURRENCY} in flight ...`);
  const seedSeconds = await seed(api);
  const matching = await checkAnswer(api);
  progress(`stored in ${seedSeconds.toFixed(1)} s; ${matching} names match *5*`);

  await sequentialLatencies(api, LIST_PATH, WARMUP_REQUESTS);
  progress(`${REQUESTS} sequential requests: GET ${LIST_PATH}`);
  const sequential = summarize(await sequentialLatencies(api, LIST_PATH, REQUESTS));

  progress(`autocannon: ${CONNECTIONS} connections for ${SECONDS} s`);
  const loaded = await autocannonRun(`${svcd.apiBase}${LIST_PATH}`, api.authHeaders());
  if (loaded.non2xx > 0 || loaded.errors > 0 || loaded.requests.total === 0) {
    throw new Error(
      `autocannon: ${loaded.requests.total} responses, ${loaded.non2xx} non-2xx, ${loaded.errors} errors`,
    );
  }
  const rps = loaded.requests.total / loaded.duration;
  const ms = (v: number) => v.toFixed(2);

  const checks: Check[] = [
    {
      target: `GET library list p99 (${SCRIPTS} scripts, page of ${PAGE}, filter and sort, sequential)`,
      value: `${ms(sequential.p99)} ms`,
      limit: `<= ${TARGETS.maxListP99Ms} ms`,
      pass: sequential.p99 <= TARGETS.maxListP99Ms,
    },
  ];
  const out = [
    '',
    `svcd script library benchmark: ${SCRIPTS} scripts in SQLite, GET /api/v1${LIST_PATH} ` +
      `(${matching} matching); load average before ${loadBefore}, after ${loadAverage()}`,
    '',
    table(
      ['run', 'requests', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms'],
      [
        [
          'sequential (1 connection)',
          String(sequential.count),
          (sequential.count / ((sequential.mean * sequential.count) / 1000)).toFixed(0),
          ms(sequential.p50),
          ms(sequential.p90),
          ms(sequential.p99),
          ms(sequential.max),
        ],
        [
          `autocannon (${CONNECTIONS} connections, ${SECONDS} s)`,
          String(loaded.requests.total),
          rps.toFixed(0),
          String(loaded.latency.p50),
          String(loaded.latency.p90),
          String(loaded.latency.p99),
          String(loaded.latency.max),
        ],
      ],
    ),
    '',
    checksTable(checks),
    '',
  ];
  const file = await writeResult('library', {
    date: new Date().toISOString(),
    settings: {
      scripts: SCRIPTS,
      requests: REQUESTS,
      seconds: SECONDS,
      connections: CONNECTIONS,
      seedConcurrency: SEED_CONCURRENCY,
      path: LIST_PATH,
      svcdNodeArgs: SVCD_NODE_ARGS,
    },
    machine: machine(),
    targets: TARGETS,
    seedSeconds,
    matching,
    sequentialMs: sequential,
    autocannon: {
      requests: loaded.requests.total,
      rps,
      latencyMs: {
        p50: loaded.latency.p50,
        p90: loaded.latency.p90,
        p99: loaded.latency.p99,
        max: loaded.latency.max,
      },
    },
    checks,
  });
  out.push(`results written to ${file}`, '');
  process.stdout.write(out.join('\n'));
  return checks.every((c) => c.pass);
}

await runBench(main, STRICT);
