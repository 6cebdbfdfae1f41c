/**
 * svcd HTTP benchmark: GET /api/v1/status (Bearer) against a bare Fastify reference, and logins (bcrypt cost 10)
 * with the /status p99 measured at the same time. Starts the built svcd and the reference as child processes on
 * 127.0.0.1, drives them with autocannon, prints a PASS/FAIL table and writes bench/results/status-<time>.json.
 *
 *   npm run build && npm run bench
 *
 * Environment: BENCH_SECONDS (default 10) per measured run, BENCH_WARMUP_SECONDS (default 2) before each,
 * BENCH_LOGIN_CONNECTIONS (default 8), BENCH_STRICT=1 to exit 1 when a target fails,
 * BENCH_SVCD_NODE_ARGS extra node flags for svcd (e.g. "--cpu-prof --cpu-prof-dir=/tmp/svcd-prof").
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { hash } from '@node-rs/bcrypt';
import autocannon from 'autocannon';
import type { Managed } from './support/child-processes.js';
import {
  children,
  envNumber,
  freePort,
  HOST,
  readPrintedPort,
  startChild,
  stopAllChildren,
} from './support/child-processes.js';
import { processCpuMs } from './support/proc-stats.js';
import { table } from './support/report.js';
import { runBench } from './support/bench-runner.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..');
const SVCD_BIN = join(ROOT, 'packages/server/bin/svcd.js');
const SVCD_MAIN = join(ROOT, 'packages/server/dist/main.js');
const REFERENCE_SCRIPT = join(HERE, 'reference-server.ts');
const RESULTS_DIR = join(HERE, 'results');
const STATUS_PATH = '/api/v1/status';
const BCRYPT_COST = 10;
const STARTUP_TIMEOUT_MS = 30_000;
const START_ATTEMPTS = 3;

const TARGETS = {
  /** svcd /status req/s divided by the reference's, at each connection count. */
  minRatio: 0.5,
  minLoginsPerSecond: 30,
  /** p99 of /status (2 connections) while logins saturate the server. */
  maxStatusP99DuringLoginsMs: 50,
};

const SECONDS = envNumber('BENCH_SECONDS', 10, 3600);
const WARMUP_SECONDS = envNumber('BENCH_WARMUP_SECONDS', 2, 600);
const LOGIN_CONNECTIONS = Math.round(envNumber('BENCH_LOGIN_CONNECTIONS', 8, 64));
/** Steady /status probe rate while logins run (BENCH_PROBE_RATE). */
const PROBE_RATE = Math.round(envNumber('BENCH_PROBE_RATE', 50, 10_000));
const STRICT = process.env['BENCH_STRICT'] === '1';
const SVCD_NODE_ARGS = (process.env['BENCH_SVCD_NODE_ARGS'] ?? '').split(/\s+/).filter(Boolean);

// ---------------------------------------------------------------------------------------------------------------
// Child processes

const loads = new Set<autocannon.Instance>();

async function stopAll(): Promise<void> {
  for (const load of loads) load.stop();
  loads.clear();
  await stopAllChildren();
}

/** Polls `url` until it answers with any HTTP status, at most STARTUP_TIMEOUT_MS. */
async function waitUntilAnswering(url: string, child: Managed): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (!child.running) {
      throw new Error(`${child.name} stopped before answering (${child.describeExit()}):\n${child.tail()}`);
    }
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      await response.arrayBuffer();
      return;
    } catch {
      await sleep(100);
    }
  }
  throw new Error(`${child.name} did not answer ${url} within ${STARTUP_TIMEOUT_MS} ms:\n${child.tail()}`);
}

// ---------------------------------------------------------------------------------------------------------------
// svcd and the reference

interface Svcd {
  child: Managed;
  /** e.g. http://127.0.0.1:41234/api/v1 */
  api: string;
}

const tomlString = (value: string) => JSON.stringify(value);

async function startSvcd(workDir: string, userFile: string): Promise<Svcd> {
  if (!existsSync(SVCD_MAIN)) {
    throw new Error(`svcd is not built (${SVCD_MAIN} is missing): run npm run build first`);
  }
  for (let attempt = 1; attempt <= START_ATTEMPTS; attempt++) {
    const port = await freePort();
    const dataDir = join(workDir, `data-${attempt}`);
    const configPath = join(workDir, `svcd-${attempt}.conf`);
    const config = [
      '[server]',
      `address = ${tomlString(`${HOST}:0`)}`,
      `data_dir = ${tomlString(dataDir)}`,
      '[api]',
      `address = ${tomlString(`${HOST}:${port}`)}`,
      `auth_file = ${tomlString(userFile)}`,
      '[logging]',
      'log_level = "warn"',
      '',
    ].join('\n');
    await writeFile(configPath, config, { mode: 0o600 });
    const child = startChild('svcd', process.execPath, [...SVCD_NODE_ARGS, SVCD_BIN, '-c', configPath], {
      cwd: workDir,
    });
    const api = `http://${HOST}:${port}/api/v1`;
    try {
      await waitUntilAnswering(`${api}/status`, child);
      return { child, api };
    } catch (err) {
      await child.stop();
      children.delete(child);
      const portTaken = /EADDRINUSE|already in use/.test(child.tail());
      if (!portTaken || attempt === START_ATTEMPTS) throw err;
      process.stderr.write(`bench: port ${port} was taken before svcd could bind it; retrying\n`);
    }
  }
  throw new Error('unreachable');
}

async function startReference(statusData: unknown): Promise<{ child: Managed; url: string }> {
  const child = startChild('reference server', process.execPath, ['--import', 'tsx', REFERENCE_SCRIPT], {
    cwd: HERE,
    env: { ...process.env, REFERENCE_STATUS_DATA: JSON.stringify(statusData) },
  });
  const port = await readPrintedPort(child, STARTUP_TIMEOUT_MS);
  return { child, url: `http://${HOST}:${port}${STATUS_PATH}` };
}

async function fetchText(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; text: string }> {
  const response = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) });
  return { status: response.status, text: await response.text() };
}

async function login(api: string, basic: string, lifetimeSeconds: number): Promise<string> {
  const { status, text } = await fetchText(`${api}/login?token-lifetime=${lifetimeSeconds}`, {
    authorization: basic,
  });
  if (status !== 200) throw new Error(`login failed: HTTP ${status} ${text}`);
  const token = (JSON.parse(text) as { data?: { token?: unknown } }).data?.token;
  if (typeof token !== 'string') throw new Error(`login answered without a token: ${text}`);
  return token;
}

// ---------------------------------------------------------------------------------------------------------------
// CPU accounting: the box has 2 cores shared with other work, so each run records how much CPU other processes
// took meanwhile (machine busy time minus this process and its children).

/** Linux USER_HZ, the unit of utime/stime in /proc/<pid>/stat. */

interface CpuSnapshot {
  atMs: number;
  /** Busy CPU time of the whole machine, ms summed over cores. */
  machineMs: number;
  /** CPU time of this process and the servers it started, ms. */
  ownMs: number;
}

function cpuSnapshot(): CpuSnapshot {
  const machineMs = cpus().reduce((sum, { times: t }) => sum + t.user + t.nice + t.sys + t.irq, 0);
  const self = process.cpuUsage();
  let ownMs = (self.user + self.system) / 1000;
  for (const child of children) ownMs += processCpuMs(child.proc.pid) ?? 0;
  return { atMs: performance.now(), machineMs, ownMs };
}

interface CpuFigures {
  /** Average number of cores busy on the machine during the run (out of `availableParallelism()`). */
  machineCores: number;
  /** Of which used by the bench process and its servers. */
  ownCores: number;
  /** Used by anything else (other builds, tests): the noise indicator. */
  otherCores: number;
}

function cpuBetween(a: CpuSnapshot, b: CpuSnapshot): CpuFigures {
  const wall = b.atMs - a.atMs;
  if (wall <= 0) return { machineCores: 0, ownCores: 0, otherCores: 0 };
  const machineCores = (b.machineMs - a.machineMs) / wall;
  const ownCores = (b.ownMs - a.ownMs) / wall;
  return { machineCores, ownCores, otherCores: Math.max(0, machineCores - ownCores) };
}

// ---------------------------------------------------------------------------------------------------------------
// Load runs

interface RunFigures {
  name: string;
  url: string;
  connections: number;
  seconds: number;
  requests: number;
  rps: number;
  latencyMs: { p50: number; p90: number; p99: number; average: number; max: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  cpu: CpuFigures;
}

/** One autocannon run, bounded by its duration plus 30 s; fails loudly on any error or non-2xx answer. */
function load(name: string, options: autocannon.Options): Promise<RunFigures> {
  const seconds = options.duration ?? 10;
  const guardMs = (seconds + 30) * 1000;
  const cpuBefore = cpuSnapshot();
  return new Promise<autocannon.Result>((done, fail) => {
    // Filled just below; the callback can in principle run before autocannon() returns.
    const handle: { instance?: autocannon.Instance } = {};
    const timer = setTimeout(() => {
      handle.instance?.stop();
      fail(new Error(`${name}: autocannon did not finish within ${guardMs} ms`));
    }, guardMs);
    const instance = autocannon({ timeout: 10, ...options, title: name }, (err, result) => {
      clearTimeout(timer);
      if (handle.instance) loads.delete(handle.instance);
      if (err) fail(err);
      else done(result);
    });
    handle.instance = instance;
    loads.add(instance);
  }).then((result) => {
    const cpu = cpuBetween(cpuBefore, cpuSnapshot());
    const statusCodes = Object.fromEntries(
      Object.entries(result.statusCodeStats).map(([code, stats]) => [code, stats.count]),
    );
    const figures: RunFigures = {
      name,
      url: options.url,
      connections: options.connections ?? 10,
      seconds: result.duration,
      requests: result.requests.total,
      rps: result.duration > 0 ? result.requests.total / result.duration : 0,
      latencyMs: {
        p50: result.latency.p50,
        p90: result.latency.p90,
        p99: result.latency.p99,
        average: result.latency.average,
        max: result.latency.max,
      },
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      statusCodes,
      cpu,
    };
    if (figures.non2xx > 0 || figures.errors > 0 || figures.requests === 0) {
      throw new Error(
        `${name}: ${figures.requests} responses, ${figures.non2xx} non-2xx, ${figures.errors} errors ` +
          `(${figures.timeouts} timeouts); status codes ${JSON.stringify(statusCodes)}. Every request must succeed.`,
      );
    }
    return figures;
  });
}

/** A short run whose figures are thrown away, so the measured run starts on a warm JIT and open sockets. */
async function warmUp(name: string, options: autocannon.Options): Promise<void> {
  await load(`${name} (warm-up)`, { ...options, duration: WARMUP_SECONDS });
}

async function measure(name: string, options: autocannon.Options): Promise<RunFigures> {
  process.stderr.write(`bench: ${name}, ${options.connections ?? 10} connections, ${SECONDS} s ...\n`);
  await warmUp(name, options);
  return load(name, { ...options, duration: SECONDS });
}

// ---------------------------------------------------------------------------------------------------------------
// Report

interface TargetCheck {
  target: string;
  value: number;
  unit: string;
  limit: string;
  pass: boolean;
  /** Most CPU other processes used during the runs behind this figure; above NOISY_OTHER_CORES it is suspect. */
  otherCores: number;
}

/** Cores used by other processes above which a run's figures are marked as disturbed. */
const NOISY_OTHER_CORES = 0.25;

const fixed = (value: number, digits: number) => value.toFixed(digits);

function packageVersion(name: string): string {
  try {
    const text = readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8');
    return (JSON.parse(text) as { version?: string }).version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

// ---------------------------------------------------------------------------------------------------------------

/** Temporary directories (svcd data dir, config, user file), removed at the end. */
const workDirs = new Set<string>();

async function removeWorkDirs(): Promise<void> {
  await Promise.all([...workDirs].map((dir) => rm(dir, { recursive: true, force: true })));
  workDirs.clear();
}

async function main(): Promise<boolean> {
  const loadavgBefore = loadavg();
  const idleStart = cpuSnapshot();
  await sleep(1_000);
  const busyBefore = cpuBetween(idleStart, cpuSnapshot()).otherCores;
  if (busyBefore > 0.2) {
    process.stderr.write(
      `bench: WARNING other processes already use ${busyBefore.toFixed(2)} of ${availableParallelism()} cores; ` +
        'the figures will be low (see the "other cores" column)\n',
    );
  }
  const workDir = await mkdtemp(join(tmpdir(), 'svcd-bench-'));
  workDirs.add(workDir);
  try {
    const username = 'bench-admin';
    const password = randomBytes(18).toString('base64url');
    const userFile = join(workDir, 'users.json');
    const users = [
      { username, password: await hash(password, { cost: BCRYPT_COST }), groups: ['Administrators'] },
    ];
    await writeFile(userFile, JSON.stringify(users), { mode: 0o600 });
    const basic = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;

    const svcd = await startSvcd(workDir, userFile);
    // Long enough for every run, warm-ups included, whatever BENCH_SECONDS is.
    const lifetime = Math.max(3600, Math.ceil(6 * (SECONDS + WARMUP_SECONDS) + 600));
    const token = await login(svcd.api, basic, lifetime);
    const bearer = { authorization: `Bearer ${token}` };
    const svcdStatusUrl = `${svcd.api}/status`;

    const svcdStatus = await fetchText(svcdStatusUrl, bearer);
    if (svcdStatus.status !== 200)
      throw new Error(`svcd /status: HTTP ${svcdStatus.status} ${svcdStatus.text}`);
    const statusData = (JSON.parse(svcdStatus.text) as { data?: unknown }).data;
    if (!statusData || typeof statusData !== 'object')
      throw new Error(`svcd /status: no data in ${svcdStatus.text}`);

    const reference = await startReference(statusData);
    await waitUntilAnswering(reference.url, reference.child);
    const referenceStatus = await fetchText(reference.url, {});
    if (referenceStatus.text !== svcdStatus.text) {
      throw new Error(
        `reference body differs from svcd's:\n  svcd: ${svcdStatus.text}\n  ref:  ${referenceStatus.text}`,
      );
    }
    process.stderr.write(
      `bench: svcd ${svcd.api}, reference ${reference.url}, body ${svcdStatus.text.length} bytes\n`,
    );

    const runs: RunFigures[] = [];
    const ratios: { connections: number; svcd: RunFigures; reference: RunFigures; ratio: number }[] = [];
    for (const connections of [2, 50]) {
      const own = await measure('svcd GET /api/v1/status (Bearer)', {
        url: svcdStatusUrl,
        connections,
        headers: bearer,
      });
      const ref = await measure('reference GET /api/v1/status', { url: reference.url, connections });
      runs.push(own, ref);
      ratios.push({ connections, svcd: own, reference: ref, ratio: own.rps / ref.rps });
    }

    // Logins saturate the bcrypt pool while a second client probes /status latency at a steady, light rate
    // (an operator's dashboard, not a second load test competing with bcrypt for the two cores).
    const loginOptions = {
      url: `${svcd.api}/login`,
      connections: LOGIN_CONNECTIONS,
      headers: { authorization: basic },
    };
    process.stderr.write(
      `bench: logins (${LOGIN_CONNECTIONS} connections) with /status at ${PROBE_RATE} req/s alongside, ${SECONDS} s ...\n`,
    );
    await warmUp('svcd GET /api/v1/login (Basic)', loginOptions);
    const [logins, statusDuringLogins] = await Promise.all([
      load('svcd GET /api/v1/login (Basic)', { ...loginOptions, duration: SECONDS }),
      load('svcd /status during logins (Bearer)', {
        url: svcdStatusUrl,
        connections: 2,
        overallRate: PROBE_RATE,
        headers: bearer,
        duration: SECONDS,
      }),
    ]);
    runs.push(logins, statusDuringLogins);

    const checks: TargetCheck[] = [
      ...ratios.map((r) => ({
        target: `svcd/reference req/s at ${r.connections} connections`,
        value: r.ratio,
        unit: '',
        limit: `>= ${TARGETS.minRatio}`,
        pass: r.ratio >= TARGETS.minRatio,
        otherCores: Math.max(r.svcd.cpu.otherCores, r.reference.cpu.otherCores),
      })),
      {
        target: `logins/s (bcrypt cost ${BCRYPT_COST}, ${LOGIN_CONNECTIONS} connections)`,
        value: logins.rps,
        unit: '/s',
        limit: `>= ${TARGETS.minLoginsPerSecond}/s`,
        pass: logins.rps >= TARGETS.minLoginsPerSecond,
        otherCores: logins.cpu.otherCores,
      },
      {
        target: `/status p99 during logins (${PROBE_RATE} req/s)`,
        value: statusDuringLogins.latencyMs.p99,
        unit: ' ms',
        limit: `< ${TARGETS.maxStatusP99DuringLoginsMs} ms`,
        pass: statusDuringLogins.latencyMs.p99 < TARGETS.maxStatusP99DuringLoginsMs,
        otherCores: statusDuringLogins.cpu.otherCores,
      },
    ];

    const machine = {
      nproc: availableParallelism(),
      cpu: cpus()[0]?.model ?? 'unknown',
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
      otherCoresBeforeStart: busyBefore,
      loadavgBefore,
      loadavgAfter: loadavg(),
    };
    const versions = {
      autocannon: packageVersion('autocannon'),
      fastify: packageVersion('fastify'),
      svcd: (JSON.parse(svcdStatus.text) as { data: { version?: string } }).data.version ?? 'unknown',
    };

    const out: string[] = [
      '',
      `svcd status benchmark: ${SECONDS} s per run after ${WARMUP_SECONDS} s warm-up; ${machine.nproc} CPUs ` +
        `(${machine.cpu}), Node ${machine.node}, autocannon ${versions.autocannon}, fastify ${versions.fastify}`,
      `other processes used ${busyBefore.toFixed(2)} cores just before the start; load average before ` +
        `${loadavgBefore.map((l) => l.toFixed(2)).join(' ')}, after ${machine.loadavgAfter.map((l) => l.toFixed(2)).join(' ')}`,
      '',
      table(
        [
          'run',
          'conns',
          'req/s',
          'p50 ms',
          'p99 ms',
          'max ms',
          'requests',
          'non-2xx',
          'cores used',
          'other cores',
        ],
        runs.map((r) => [
          r.name,
          String(r.connections),
          fixed(r.rps, r.rps < 100 ? 1 : 0),
          String(r.latencyMs.p50),
          String(r.latencyMs.p99),
          String(r.latencyMs.max),
          String(r.requests),
          String(r.non2xx),
          fixed(r.cpu.ownCores, 2),
          fixed(r.cpu.otherCores, 2),
        ]),
      ),
      '',
      table(
        ['target', 'value', 'limit', 'result', 'other cores'],
        checks.map((c) => [
          c.target,
          `${fixed(c.value, c.unit === '' ? 2 : 1)}${c.unit}`,
          c.limit,
          c.pass ? 'PASS' : 'FAIL',
          `${fixed(c.otherCores, 2)}${c.otherCores > NOISY_OTHER_CORES ? ' (disturbed)' : ''}`,
        ]),
      ),
      '',
      `"cores used": this process (load generator) + svcd + reference; "other cores": everything else on the ` +
        `machine during the run. Above ${NOISY_OTHER_CORES} the figure is disturbed by other work: run again.`,
      '',
    ];

    await mkdir(RESULTS_DIR, { recursive: true });
    const file = join(RESULTS_DIR, `status-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    const report = {
      date: new Date().toISOString(),
      settings: {
        seconds: SECONDS,
        warmupSeconds: WARMUP_SECONDS,
        loginConnections: LOGIN_CONNECTIONS,
        bcryptCost: BCRYPT_COST,
        svcdNodeArgs: SVCD_NODE_ARGS,
      },
      machine,
      versions,
      targets: TARGETS,
      ratios: ratios.map((r) => ({
        connections: r.connections,
        ratio: r.ratio,
        svcdRps: r.svcd.rps,
        referenceRps: r.reference.rps,
      })),
      checks,
      runs,
    };
    await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
    out.push(`results written to ${file}`, '');
    process.stdout.write(out.join('\n'));
    return checks.every((c) => c.pass);
  } finally {
    await stopAll();
    await removeWorkDirs();
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`bench: ${signal}, stopping the servers\n`);
    void stopAll()
      .then(removeWorkDirs)
      .finally(() => process.exit(130));
  });
}

await runBench(main, STRICT);
