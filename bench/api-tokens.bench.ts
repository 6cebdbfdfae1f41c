/**
 * API-token benchmark (issue 16): GET /api/v1/status with HTTP Basic `<user>:<prefix>_<secret>` (a personal API
 * token) against the same request with a Bearer JWT, in the same run and on the same svcd (the built one, as a
 * child process; SQLite; static admin, whose tokens live in the database). Target: token req/s ≥ 0.5 × Bearer
 * req/s, i.e. a token check costs no bcrypt. Runs alternate (Bearer, token, Bearer, token) so drift on a shared
 * machine hits both; the ratio uses the sums. Prints a table and PASS/FAIL, writes bench/results/api-tokens-<time>.json.
 *
 *   npm run build && npm run bench:tokens
 *
 * Environment: BENCH_SECONDS (default 10) per measured run after BENCH_WARMUP_SECONDS (default 2),
 * BENCH_CONNECTIONS (default 10), BENCH_STRICT=1 to exit 1 when the target fails.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { envNumber, HOST, stopAllChildren } from './support/child-processes.js';
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
import { runBench } from './support/bench-runner.js';

const SECONDS = envNumber('BENCH_SECONDS', 10, 3600);
const WARMUP_SECONDS = envNumber('BENCH_WARMUP_SECONDS', 2, 600);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 10, 1000);
const STRICT = process.env['BENCH_STRICT'] === '1';
const ROUNDS = 2;
const TARGETS = { minTokenToBearerRatio: 0.5 };

interface Run {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  max: number;
  requests: number;
}

async function call(api: string, method: string, path: string, authorization: string, body?: unknown) {
  const response = await fetch(`${api}${path}`, {
    method,
    headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: HTTP ${response.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as { data: Record<string, unknown> };
}

function load(name: string, url: string, authorization: string, seconds: number): Promise<Run> {
  return new Promise<Run>((resolve, reject) => {
    const guard = setTimeout(
      () => reject(new Error(`${name}: autocannon did not finish`)),
      (seconds + 30) * 1000,
    );
    autocannon(
      {
        url,
        connections: CONNECTIONS,
        duration: seconds,
        timeout: 10,
        headers: { authorization },
        title: name,
      },
      (err, result) => {
        clearTimeout(guard);
        if (err) return reject(err);
        if (result.non2xx > 0 || result.errors > 0 || result.requests.total === 0) {
          return reject(
            new Error(
              `${name}: ${result.non2xx} non-2xx, ${result.errors} errors of ${result.requests.total}`,
            ),
          );
        }
        resolve({
          name,
          rps: result.requests.total / result.duration,
          p50: result.latency.p50,
          p99: result.latency.p99,
          max: result.latency.max,
          requests: result.requests.total,
        });
      },
    );
  });
}

async function measure(name: string, url: string, authorization: string): Promise<Run> {
  progress(`${name}, ${CONNECTIONS} connections, ${SECONDS} s ...`);
  await load(`${name} (warm-up)`, url, authorization, WARMUP_SECONDS);
  return load(name, url, authorization, SECONDS);
}

async function main(): Promise<boolean> {
  const workDir = await mkdtemp(join(tmpdir(), 'svcd-bench-tokens-'));
  const svcd = new SvcdProcess({ workDir, maxHandshakes: 0, nodeArgs: [] });
  try {
    await svcd.start();
    const api = svcd.apiBase;
    const password = `Basic ${Buffer.from(`${API_USER.name}:${API_USER.password}`).toString('base64')}`;
    const login = await call(api, 'GET', '/login?token-lifetime=3600', password);
    const bearer = `Bearer ${String(login.data['token'])}`;
    const created = await call(api, 'POST', '/me/tokens', bearer, { name: 'bench', scope: 'read' });
    const apiToken = `Basic ${Buffer.from(`${API_USER.name}:${String(created.data['token'])}`).toString('base64')}`;
    await call(api, 'GET', '/status', apiToken);

    const url = `${api}/status`;
    const bearerRuns: Run[] = [];
    const tokenRuns: Run[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      bearerRuns.push(await measure(`GET /status, Bearer JWT (round ${round})`, url, bearer));
      tokenRuns.push(await measure(`GET /status, Basic API token (round ${round})`, url, apiToken));
    }
    const sum = (runs: Run[]) => runs.reduce((total, r) => total + r.rps, 0);
    const ratio = sum(tokenRuns) / sum(bearerRuns);
    const checks: Check[] = [
      {
        target: 'API-token req/s ÷ Bearer req/s on GET /status',
        value: ratio.toFixed(2),
        limit: `>= ${TARGETS.minTokenToBearerRatio}`,
        pass: ratio >= TARGETS.minTokenToBearerRatio,
      },
    ];
    const runs = bearerRuns.flatMap((b, i) => [b, tokenRuns[i] as Run]);
    const summary = [
      '',
      `svcd API-token benchmark on ${HOST}: SQLite, static admin; ${CONNECTIONS} connections, ${SECONDS} s per run ` +
        `after ${WARMUP_SECONDS} s warm-up; load average ${loadAverage()}`,
      '',
      table(
        ['run', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'requests'],
        runs.map((r) => [
          r.name,
          r.rps.toFixed(0),
          String(r.p50),
          String(r.p99),
          String(r.max),
          String(r.requests),
        ]),
      ),
      '',
      checksTable(checks),
      '',
    ];
    const file = await writeResult('api-tokens', {
      date: new Date().toISOString(),
      settings: { seconds: SECONDS, warmupSeconds: WARMUP_SECONDS, connections: CONNECTIONS, rounds: ROUNDS },
      machine: machine(),
      ratio,
      runs,
      checks,
    });
    process.stdout.write(`${summary.join('\n')}results written to ${file}\n`);
    return checks.every((c) => c.pass);
  } finally {
    await svcd.stop();
    await stopAllChildren();
    await rm(workDir, { recursive: true, force: true });
  }
}

await runBench(main, STRICT);
