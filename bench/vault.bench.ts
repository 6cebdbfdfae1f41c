/**
 * Vault benchmark (issue 15), against the built svcd as a child process (SQLite, production scrypt parameters):
 *   1. unlock time: POST /vault-admin/sesame after a lock, BENCH_VAULT_UNLOCKS times (target: each ≤ 1 s);
 *   2. GET /vault/{id} (decrypts one value) and GET /status in the same run, as fast as they go with autocannon
 *      (targets: p99 ≤ 10 ms and req/s ≥ 0.5 × those of /status);
 *   3. GET /vault with BENCH_VAULT_ENTRIES entries (default 10,000), one page of 50: the first page by id (target:
 *      p99 ≤ 20 ms), and for information a page from the middle sorted by key (a full sort of the table).
 * Prints a table and PASS/FAIL, writes bench/results/vault-<time>.json.
 *
 *   npm run build && npm run bench:vault
 *
 * Environment: BENCH_SECONDS (default 10) per measured run after BENCH_WARMUP_SECONDS (default 2),
 * BENCH_CONNECTIONS (default 10) for run 2, BENCH_LIST_CONNECTIONS (default 4) for run 3, BENCH_VAULT_ENTRIES,
 * BENCH_VAULT_UNLOCKS, BENCH_SVCD_NODE_ARGS (extra node flags for svcd, e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`),
 * BENCH_STRICT=1 to exit 1 when a target fails.
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
const LIST_CONNECTIONS = envNumber('BENCH_LIST_CONNECTIONS', 4, 1000);
const ENTRIES = envNumber('BENCH_VAULT_ENTRIES', 10_000, 1_000_000);
const UNLOCKS = envNumber('BENCH_VAULT_UNLOCKS', 5, 100);
const STRICT = process.env['BENCH_STRICT'] === '1';
const SVCD_NODE_ARGS = (process.env['BENCH_SVCD_NODE_ARGS'] ?? '').split(/\s+/).filter(Boolean);
const VAULT_PASSWORD = 'bench-vault-password';
const FILL_CONCURRENCY = 8;

const TARGETS = { maxUnlockMs: 1000, maxGetP99Ms: 10, minGetToStatusRatio: 0.5, maxListP99Ms: 20 };

interface Run {
  name: string;
  connections: number;
  rps: number;
  p50: number;
  p99: number;
  max: number;
  requests: number;
}

async function call(api: string, method: string, path: string, auth: string, body?: unknown) {
  const response = await fetch(`${api}${path}`, {
    method,
    headers: { authorization: auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  return { status: response.status, json: text ? (JSON.parse(text) as { data?: unknown }) : undefined, text };
}

async function expectStatus(answer: Promise<{ status: number; text: string }>, status: number, what: string) {
  const { status: got, text } = await answer;
  if (got !== status) throw new Error(`${what}: HTTP ${got} ${text.slice(0, 300)}`);
}

function load(name: string, url: string, connections: number, seconds: number, bearer: string): Promise<Run> {
  return new Promise<Run>((resolve, reject) => {
    const guard = setTimeout(
      () => reject(new Error(`${name}: autocannon did not finish`)),
      (seconds + 30) * 1000,
    );
    autocannon(
      { url, connections, duration: seconds, timeout: 10, headers: { authorization: bearer }, title: name },
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
          connections,
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

async function measure(name: string, url: string, connections: number, bearer: string): Promise<Run> {
  progress(`${name}, ${connections} connections, ${SECONDS} s ...`);
  await load(`${name} (warm-up)`, url, connections, WARMUP_SECONDS, bearer);
  return load(name, url, connections, SECONDS, bearer);
}

async function main(): Promise<boolean> {
  const workDir = await mkdtemp(join(tmpdir(), 'svcd-bench-vault-'));
  const svcd = new SvcdProcess({ workDir, maxHandshakes: 0, nodeArgs: SVCD_NODE_ARGS });
  try {
    await svcd.start();
    const api = svcd.apiBase;
    const basic = `Basic ${Buffer.from(`${API_USER.name}:${API_USER.password}`).toString('base64')}`;
    const login = await call(api, 'GET', '/login?token-lifetime=3600', basic);
    const token = (login.json?.data as { token?: string } | undefined)?.token;
    if (!token) throw new Error(`login failed: HTTP ${login.status} ${login.text}`);
    const bearer = `Bearer ${token}`;

    progress('init (production scrypt parameters) and unlock timings ...');
    let started = performance.now();
    await expectStatus(
      call(api, 'POST', '/vault-admin/init', bearer, { password: VAULT_PASSWORD }),
      201,
      'init',
    );
    const initMs = performance.now() - started;
    const unlockMs: number[] = [];
    for (let i = 0; i < UNLOCKS; i++) {
      await expectStatus(call(api, 'DELETE', '/vault-admin/sesame', bearer), 204, 'lock');
      started = performance.now();
      await expectStatus(
        call(api, 'POST', '/vault-admin/sesame', bearer, { password: VAULT_PASSWORD }),
        201,
        'unlock',
      );
      unlockMs.push(performance.now() - started);
    }

    progress(`filling the vault with ${ENTRIES} entries ...`);
    started = performance.now();
    let next = 0;
    const fill = async () => {
      while (next < ENTRIES) {
        const i = next++;
        const body = {
          client_id: `client-${i % 100}`,
          key: `key-${i}`,
          value: `value-${i}-${'x'.repeat(64)}`,
          type: 'secret',
        };
        await expectStatus(call(api, 'POST', '/vault', bearer, body), 201, 'POST /vault');
      }
    };
    await Promise.all(Array.from({ length: FILL_CONCURRENCY }, fill));
    const fillSeconds = (performance.now() - started) / 1000;
    const probe = await call(api, 'GET', `/vault/${Math.ceil(ENTRIES / 2)}`, bearer);
    if (probe.status !== 200) throw new Error(`GET /vault/{id}: HTTP ${probe.status} ${probe.text}`);

    const status = await measure('GET /status', `${api}/status`, CONNECTIONS, bearer);
    const get = await measure(
      'GET /vault/{id}',
      `${api}/vault/${Math.ceil(ENTRIES / 2)}`,
      CONNECTIONS,
      bearer,
    );
    const firstPage = await measure(
      `GET /vault page[limit]=50 (${ENTRIES} entries)`,
      `${api}/vault?page[limit]=50`,
      LIST_CONNECTIONS,
      bearer,
    );
    const middlePage = await measure(
      `GET /vault sort=-key page[limit]=50 page[offset]=${ENTRIES / 2}`,
      `${api}/vault?sort=-key&page[limit]=50&page[offset]=${Math.floor(ENTRIES / 2)}`,
      LIST_CONNECTIONS,
      bearer,
    );
    const runs = [status, get, firstPage, middlePage];
    const ratio = get.rps / status.rps;
    const worstUnlock = Math.max(...unlockMs);
    const checks: Check[] = [
      {
        target: `vault unlock, worst of ${UNLOCKS}`,
        value: `${worstUnlock.toFixed(0)} ms`,
        limit: `<= ${TARGETS.maxUnlockMs} ms`,
        pass: worstUnlock <= TARGETS.maxUnlockMs,
      },
      {
        target: 'GET /vault/{id} p99',
        value: `${get.p99} ms`,
        limit: `<= ${TARGETS.maxGetP99Ms} ms`,
        pass: get.p99 <= TARGETS.maxGetP99Ms,
      },
      {
        target: 'GET /vault/{id} req/s ÷ GET /status req/s',
        value: ratio.toFixed(2),
        limit: `>= ${TARGETS.minGetToStatusRatio}`,
        pass: ratio >= TARGETS.minGetToStatusRatio,
      },
      {
        target: `${firstPage.name} p99`,
        value: `${firstPage.p99} ms`,
        limit: `<= ${TARGETS.maxListP99Ms} ms`,
        pass: firstPage.p99 <= TARGETS.maxListP99Ms,
      },
    ];

    const summary = [
      '',
      `svcd vault benchmark on ${HOST}: SQLite, production scrypt; ${SECONDS} s per run after ${WARMUP_SECONDS} s warm-up; ` +
        `load average ${loadAverage()}`,
      `init ${initMs.toFixed(0)} ms; unlocks ${unlockMs.map((ms) => ms.toFixed(0)).join(', ')} ms; ` +
        `filled ${ENTRIES} entries in ${fillSeconds.toFixed(1)} s (${(ENTRIES / fillSeconds).toFixed(0)} POST/s, ${FILL_CONCURRENCY} in flight)`,
      '',
      table(
        ['run', 'conns', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'requests'],
        runs.map((r) => [
          r.name,
          String(r.connections),
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
    const file = await writeResult('vault', {
      date: new Date().toISOString(),
      settings: {
        seconds: SECONDS,
        warmupSeconds: WARMUP_SECONDS,
        connections: CONNECTIONS,
        listConnections: LIST_CONNECTIONS,
        entries: ENTRIES,
        svcdNodeArgs: SVCD_NODE_ARGS,
      },
      machine: machine(),
      initMs,
      unlockMs,
      fillSeconds,
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
