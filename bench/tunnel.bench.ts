/**
 * Tunnel throughput benchmark (issue 3): one TCP stream of BENCH_TUNNEL_MIB MiB in each direction over
 *   1. raw loopback TCP (node `net` straight to the sink),
 *   2. an svcd tunnel (built svcd + built svc agent as child processes; tunnel port → svcd → ws/SSH → agent → sink),
 *   3. OpenSSH `ssh -N -L` with aes128-gcm@openssh.com to a throwaway sshd (own keys and config in a temp dir).
 * Upload: the bench writes N MiB, the sink answers once all of it arrived. Download: the bench asks, the sink sends
 * N MiB. Everything listens on 127.0.0.1; every wait is bounded; every child is stopped at the end, also on error.
 *
 *   npm run build && npm run bench:tunnel
 *
 * Environment: BENCH_TUNNEL_MIB (default 1024) per transfer, BENCH_TUNNEL_RUNS (default 3) per path and direction
 * (the median is reported), BENCH_STRICT=1 to exit 1 when a target fails, BENCH_TUNNEL_PATHS (raw,svcd,openssh) to
 * measure only some paths, BENCH_TUNNEL_DIRECTIONS (upload,download) to measure only one way, BENCH_SVCD_NODE_ARGS / BENCH_SVC_NODE_ARGS for extra node flags (e.g. --cpu-prof).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { loadavg, tmpdir, userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Managed } from './support/child-processes.js';
import { processTreeCpuTimes, type CpuTimes } from './support/proc-stats.js';
import { writeRandomBytes } from './support/sink-transfer.js';
import {
  envNumber,
  freePort,
  HOST,
  readPrintedPort,
  startChild,
  stopAllChildren,
} from './support/child-processes.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..');
const SVCD_BIN = join(ROOT, 'packages/server/bin/svcd.js');
const SVCD_MAIN = join(ROOT, 'packages/server/dist/main.js');
const SVC_BIN = join(ROOT, 'packages/agent/bin/svc.js');
const SVC_MAIN = join(ROOT, 'packages/agent/dist/main.js');
const SINK_SCRIPT = join(HERE, 'tunnel-sink.ts');
const SSHD = '/usr/sbin/sshd';
const MIB = 1024 * 1024;
const STARTUP_TIMEOUT_MS = 30_000;
const INSTALL_TIMEOUT_MS = 180_000;
const CIPHER = 'aes128-gcm@openssh.com';
const CLIENT_AUTH = { id: 'bench', password: 'bench-pass-1234' };
const API_USER = { name: 'admin', password: 'bench-admin-1234' };
const AGENT_ID = 'bench-agent';

const TARGETS = { minSvcdToOpenSsh: 0.8, minSvcdToRaw: 0.25 };

const SIZE_MIB = envNumber('BENCH_TUNNEL_MIB', 1024, 65_536);
const RUNS = envNumber('BENCH_TUNNEL_RUNS', 3, 50);
const STRICT = process.env['BENCH_STRICT'] === '1';
/** Extra node flags for the svcd and svc children, e.g. `--cpu-prof`. */
const SVCD_NODE_ARGS = (process.env['BENCH_SVCD_NODE_ARGS'] ?? '').split(' ').filter(Boolean);
const SVC_NODE_ARGS = (process.env['BENCH_SVC_NODE_ARGS'] ?? '').split(' ').filter(Boolean);
/** Paths to measure, comma-separated: raw, svcd, openssh (default all). */
const PATHS = new Set((process.env['BENCH_TUNNEL_PATHS'] ?? 'raw,svcd,openssh').split(','));
/** Directions to measure, comma-separated: upload, download (default both). */
const DIRECTIONS = new Set((process.env['BENCH_TUNNEL_DIRECTIONS'] ?? 'upload,download').split(','));
const SIZE = SIZE_MIB * MIB;
/** One transfer may take this long: 30 s plus 5 s per 25 MiB (i.e. a 5 MiB/s floor). */
const TRANSFER_TIMEOUT_MS = 30_000 + SIZE_MIB * 200;

// ---------------------------------------------------------------------------------------------------------------
// Child processes

/** Runs a command to completion within `timeoutMs`; resolves with its exit code and output (never rejects). */
function run(
  command: string,
  args: string[],
  timeoutMs: number,
): Promise<{ code: number | null; output: string }> {
  return new Promise((done) => {
    const proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-8_192);
    };
    proc.stdout.on('data', keep);
    proc.stderr.on('data', keep);
    const timer = setTimeout(() => {
      output += `\n[killed after ${timeoutMs} ms]`;
      proc.kill('SIGKILL');
    }, timeoutMs);
    proc.once('error', (err) => {
      clearTimeout(timer);
      done({ code: null, output: `${output}\n[spawn error] ${err.message}` });
    });
    proc.once('close', (code) => {
      clearTimeout(timer);
      done({ code, output });
    });
  });
}

/** Resolves once a TCP connection to `port` succeeds (the probe is closed at once), at most STARTUP_TIMEOUT_MS. */
async function waitForAccept(port: number, child: Managed): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (!child.running) {
      throw new Error(`${child.name} stopped (${child.describeExit()}):\n${child.tail()}`);
    }
    const ok = await new Promise<boolean>((done) => {
      const socket = connect({ host: HOST, port });
      socket.setTimeout(1_000, () => {
        socket.destroy();
        done(false);
      });
      socket.once('connect', () => {
        socket.destroy();
        done(true);
      });
      socket.once('error', () => done(false));
    });
    if (ok) return;
    await sleep(100);
  }
  throw new Error(
    `${child.name} did not accept on port ${port} within ${STARTUP_TIMEOUT_MS} ms:\n${child.tail()}`,
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Sink

export async function startSink(): Promise<{ child: Managed; port: number }> {
  const child = startChild('sink', process.execPath, ['--import', 'tsx', SINK_SCRIPT], { cwd: HERE });
  return { child, port: await readPrintedPort(child, STARTUP_TIMEOUT_MS) };
}

// ---------------------------------------------------------------------------------------------------------------
// Transfers

type Direction = 'upload' | 'download';

/** Connects, runs one transfer of SIZE bytes, and returns MiB/s. Bounded by TRANSFER_TIMEOUT_MS. */
function transfer(port: number, direction: Direction): Promise<number> {
  return new Promise<number>((done, fail) => {
    const socket: Socket = connect({ host: HOST, port, allowHalfOpen: true, noDelay: true });
    let settled = false;
    const finish = (err: Error | undefined, value = 0) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) fail(err);
      else done(value);
    };
    const timer = setTimeout(
      () =>
        finish(new Error(`${direction} via port ${port} did not finish within ${TRANSFER_TIMEOUT_MS} ms`)),
      TRANSFER_TIMEOUT_MS,
    );
    let started = 0;
    let received = 0;
    let reply = '';
    socket.once('error', (err) => finish(err));
    socket.once('end', () => {
      const what = direction === 'upload' ? `reply ${JSON.stringify(reply)}` : `${received} of ${SIZE} bytes`;
      finish(new Error(`${direction} via port ${port}: the stream ended early (${what})`));
    });
    socket.once('connect', () => {
      started = performance.now();
      if (direction === 'download') {
        socket.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received >= SIZE) {
            const seconds = (performance.now() - started) / 1000;
            finish(
              received === SIZE ? undefined : new Error(`received ${received} bytes, not ${SIZE}`),
              SIZE_MIB / seconds,
            );
          }
        });
        socket.write(`D ${SIZE}\n`);
        return;
      }
      socket.on('data', (chunk: Buffer) => {
        reply += chunk.toString('latin1');
        if (reply.includes('\n')) {
          const seconds = (performance.now() - started) / 1000;
          finish(
            reply === 'OK\n' ? undefined : new Error(`unexpected reply ${JSON.stringify(reply)}`),
            SIZE_MIB / seconds,
          );
        }
      });
      socket.write(`U ${SIZE}\n`);
      writeRandomBytes(socket, SIZE, () => settled);
    });
  });
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
};

/** CPU seconds per GiB between two readings, as "total (user + system)". */
function cpuPerGib(before: CpuTimes | undefined, after: CpuTimes | undefined, gib: number): string {
  if (!before || !after) return 'unknown (process gone)';
  const user = (after.userMs - before.userMs) / 1000 / gib;
  const system = (after.systemMs - before.systemMs) / 1000 / gib;
  return `${(user + system).toFixed(2)} (user ${user.toFixed(2)} + sys ${system.toFixed(2)})`;
}

interface PathResult {
  path: string;
  available: boolean;
  note?: string;
  runs: Record<Direction, number[]>;
  median: Record<Direction, number>;
}

/**
 * Measures RUNS transfers each way; with `processes`, also reports their CPU seconds per GiB moved (each with its
 * descendants: sshd's per-connection child does OpenSSH's server-side work).
 */
export async function measure(path: string, port: number, processes: Managed[] = []): Promise<PathResult> {
  const runs: Record<Direction, number[]> = { upload: [], download: [] };
  for (const direction of (['upload', 'download'] as const).filter((d) => DIRECTIONS.has(d))) {
    const before = processes.map((p) => processTreeCpuTimes(p.proc.pid));
    for (let i = 0; i < RUNS; i++) {
      const mibPerSecond = await transfer(port, direction);
      runs[direction].push(mibPerSecond);
      process.stderr.write(
        `bench: ${path} ${direction} run ${i + 1}/${RUNS}: ${mibPerSecond.toFixed(0)} MiB/s\n`,
      );
    }
    const after = processes.map((p) => processTreeCpuTimes(p.proc.pid));
    const gib = (RUNS * SIZE_MIB) / 1024;
    const perGib = processes.map((p, i) => `${p.name} ${cpuPerGib(before[i], after[i], gib)}`);
    if (processes.length)
      process.stderr.write(`bench: ${path} ${direction} CPU s/GiB: ${perGib.join(', ')}\n`);
  }
  return {
    path,
    available: true,
    runs,
    median: { upload: median(runs.upload), download: median(runs.download) },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// svcd + svc agent

const tomlString = (value: string) => JSON.stringify(value);

/** With `tls` the agent link runs over wss ([server] tls_cert; the agent trusts `ca` with --tls-ca). */
export async function startSvcdTunnel(
  workDir: string,
  sinkPort: number,
  tls?: { cert: string; key: string; ca: string },
): Promise<{ port: number; processes: Managed[] }> {
  for (const file of [SVCD_MAIN, SVC_MAIN]) {
    if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build first`);
  }
  const [agentPort, apiPort, tunnelPort] = [await freePort(), await freePort(), await freePort()];
  const configPath = join(workDir, 'svcd.conf');
  const config = [
    '[server]',
    `address = ${tomlString(`${HOST}:${agentPort}`)}`,
    `data_dir = ${tomlString(join(workDir, 'svcd-data'))}`,
    `auth = ${tomlString(`${CLIENT_AUTH.id}:${CLIENT_AUTH.password}`)}`,
    'client_login_wait = 0',
    `used_ports = [${tomlString(String(tunnelPort))}]`,
    ...(tls ? [`tls_cert = ${tomlString(tls.cert)}`, `tls_key = ${tomlString(tls.key)}`] : []),
    '[api]',
    `address = ${tomlString(`${HOST}:${apiPort}`)}`,
    `auth = ${tomlString(`${API_USER.name}:${API_USER.password}`)}`,
    '[logging]',
    'log_level = "warn"',
    '',
  ].join('\n');
  await writeFile(configPath, config, { mode: 0o600 });
  const svcd = startChild('svcd', process.execPath, [...SVCD_NODE_ARGS, SVCD_BIN, '-c', configPath], {
    cwd: workDir,
  });
  await waitForAccept(apiPort, svcd);
  const api = `http://${HOST}:${apiPort}/api/v1`;
  const authorization = `Basic ${Buffer.from(`${API_USER.name}:${API_USER.password}`).toString('base64')}`;
  const call = async (method: string, path: string) => {
    const response = await fetch(`${api}${path}`, {
      method,
      headers: { authorization },
      signal: AbortSignal.timeout(10_000),
    });
    return { status: response.status, text: await response.text() };
  };
  const status = await call('GET', '/status');
  const fingerprint = (JSON.parse(status.text) as { data?: { fingerprint?: unknown } }).data?.fingerprint;
  if (status.status !== 200 || typeof fingerprint !== 'string') {
    throw new Error(`GET /status: HTTP ${status.status} ${status.text}`);
  }
  const agent = startChild(
    'svc agent',
    process.execPath,
    [
      ...SVC_NODE_ARGS,
      SVC_BIN,
      '--auth',
      `${CLIENT_AUTH.id}:${CLIENT_AUTH.password}`,
      '--id',
      AGENT_ID,
      '--fingerprint',
      fingerprint,
      '--data-dir',
      join(workDir, 'svc-data'),
      '--log-level',
      'warn',
      ...(tls ? ['--tls-ca', tls.ca] : []),
      `${tls ? 'https' : 'http'}://${HOST}:${agentPort}`,
    ],
    { cwd: workDir },
  );
  // The PUT fails until the agent is connected: retry, bounded.
  const query = new URLSearchParams({
    remote: `${HOST}:${sinkPort}`,
    local: `${HOST}:${tunnelPort}`,
    'skip-idle-timeout': 'true',
  });
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  let last = '';
  while (Date.now() < deadline) {
    for (const child of [svcd, agent]) {
      if (!child.running)
        throw new Error(`${child.name} stopped (${child.describeExit()}):\n${child.tail()}`);
    }
    const put = await call('PUT', `/clients/${AGENT_ID}/tunnels?${query.toString()}`);
    if (put.status === 200) {
      const lport = (JSON.parse(put.text) as { data?: { lport?: unknown } }).data?.lport;
      if (String(lport) !== String(tunnelPort))
        throw new Error(`tunnel opened on ${String(lport)}: ${put.text}`);
      await waitForAccept(tunnelPort, svcd);
      return { port: tunnelPort, processes: [svcd, agent] };
    }
    last = `HTTP ${put.status} ${put.text}`;
    await sleep(200);
  }
  throw new Error(
    `could not open the svcd tunnel within ${STARTUP_TIMEOUT_MS} ms (last: ${last})\n` +
      `svcd: ${svcd.tail()}\nagent: ${agent.tail()}`,
  );
}

// ---------------------------------------------------------------------------------------------------------------
// OpenSSH

/** Makes sure sshd and ssh exist, installing them with apt-get when missing. Returns why not, or undefined. */
async function ensureOpenSsh(): Promise<string | undefined> {
  const present = async () =>
    existsSync(SSHD) &&
    (await run('ssh', ['-V'], 10_000)).code === 0 &&
    (await run('ssh-keygen', ['-?'], 10_000)).code !== null;
  if (await present()) return undefined;
  process.stderr.write('bench: sshd is missing; installing openssh-server and openssh-client with apt-get\n');
  const install = await run(
    'apt-get',
    ['install', '-y', 'openssh-server', 'openssh-client'],
    INSTALL_TIMEOUT_MS,
  );
  if (install.code !== 0 || !(await present())) {
    return `apt-get install failed (exit ${install.code ?? '-'}): ${install.output.trim().split('\n').slice(-3).join(' / ')}`;
  }
  return undefined;
}

async function startOpenSshTunnel(
  workDir: string,
  sinkPort: number,
): Promise<{ port: number; processes: Managed[] }> {
  const dir = join(workDir, 'sshd');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await mkdir('/run/sshd', { recursive: true });
  const hostKey = join(dir, 'ssh_host_ed25519_key');
  const userKey = join(dir, 'user_ed25519');
  for (const key of [hostKey, userKey]) {
    const made = await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', key], 20_000);
    if (made.code !== 0) throw new Error(`ssh-keygen failed: ${made.output}`);
  }
  const authorizedKeys = join(dir, 'authorized_keys');
  await writeFile(authorizedKeys, await readFile(`${userKey}.pub`, 'utf8'), { mode: 0o600 });
  await chmod(userKey, 0o600);
  const sshPort = await freePort();
  const configPath = join(dir, 'sshd_config');
  await writeFile(
    configPath,
    [
      `Port ${sshPort}`,
      `ListenAddress ${HOST}`,
      `HostKey ${hostKey}`,
      `AuthorizedKeysFile ${authorizedKeys}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      'PermitRootLogin prohibit-password',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'StrictModes no',
      'AllowTcpForwarding yes',
      'Compression no',
      '',
    ].join('\n'),
  );
  const sshd = startChild('sshd', SSHD, ['-D', '-e', '-f', configPath], { cwd: dir });
  await waitForAccept(sshPort, sshd);
  const localPort = await freePort();
  const ssh = startChild(
    'ssh -L',
    'ssh',
    [
      '-F',
      '/dev/null',
      '-i',
      userKey,
      '-p',
      String(sshPort),
      '-o',
      'IdentitiesOnly=yes',
      '-o',
      'BatchMode=yes',
      '-o',
      'StrictHostKeyChecking=no',
      '-o',
      'UserKnownHostsFile=/dev/null',
      '-o',
      'ExitOnForwardFailure=yes',
      '-o',
      'Compression=no',
      '-N',
      '-c',
      CIPHER,
      '-L',
      `${HOST}:${localPort}:${HOST}:${sinkPort}`,
      `${userInfo().username}@${HOST}`,
    ],
    { cwd: dir },
  );
  await waitForAccept(localPort, ssh);
  return { port: localPort, processes: [sshd, ssh] };
}

// ---------------------------------------------------------------------------------------------------------------
// Main

async function main(): Promise<boolean> {
  const workDir = await mkdtemp(join(tmpdir(), 'svc-tunnel-bench-'));
  const results: PathResult[] = [];
  const unavailable = (path: string, note: string): PathResult => ({
    path,
    available: false,
    note,
    runs: { upload: [], download: [] },
    median: { upload: Number.NaN, download: Number.NaN },
  });
  try {
    process.stderr.write(
      `bench: ${SIZE_MIB} MiB per transfer, ${RUNS} runs per path and direction; load average ${loadavg()
        .map((n) => n.toFixed(2))
        .join(' ')}\n`,
    );
    const sink = await startSink();
    const skipped = (path: string) => unavailable(path, 'skipped (BENCH_TUNNEL_PATHS)');
    const raw = 'raw loopback TCP';
    results.push(PATHS.has('raw') ? await measure(raw, sink.port) : skipped(raw));
    const svcd = 'svcd tunnel';
    results.push(
      PATHS.has('svcd')
        ? await startSvcdTunnel(workDir, sink.port).then((t) => measure(svcd, t.port, t.processes))
        : skipped(svcd),
    );
    const openssh = `OpenSSH ssh -L ${CIPHER}`;
    const missing = PATHS.has('openssh') ? await ensureOpenSsh() : 'skipped (BENCH_TUNNEL_PATHS)';
    if (missing) {
      results.push(unavailable(openssh, missing));
    } else {
      const tunnel = await startOpenSshTunnel(workDir, sink.port);
      results.push(await measure(openssh, tunnel.port, tunnel.processes));
    }
  } finally {
    await stopAllChildren();
    await rm(workDir, { recursive: true, force: true });
  }
  return report(results);
}

function report(results: PathResult[]): boolean {
  const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(0) : 'n/a');
  const lines: string[] = [];
  lines.push('');
  lines.push(`One TCP stream of ${SIZE_MIB} MiB per transfer, median of ${RUNS} runs (MiB/s)`);
  lines.push('');
  lines.push(
    '| path | upload (client → target) | download (target → client) | upload runs | download runs |',
  );
  lines.push('| --- | --- | --- | --- | --- |');
  for (const result of results) {
    if (!result.available) {
      lines.push(`| ${result.path} | unavailable | unavailable | ${result.note ?? ''} | |`);
      continue;
    }
    lines.push(
      `| ${result.path} | ${fmt(result.median.upload)} | ${fmt(result.median.download)} | ` +
        `${result.runs.upload.map(fmt).join(' / ')} | ${result.runs.download.map(fmt).join(' / ')} |`,
    );
  }
  const [raw, svcd, openssh] = results;
  let allPass = true;
  lines.push('');
  lines.push('| ratio | direction | value | target | result |');
  lines.push('| --- | --- | --- | --- | --- |');
  for (const direction of ['upload', 'download'] as const) {
    const checks: [string, PathResult | undefined, number][] = [
      ['svcd / OpenSSH', openssh, TARGETS.minSvcdToOpenSsh],
      ['svcd / raw', raw, TARGETS.minSvcdToRaw],
    ];
    for (const [name, base, target] of checks) {
      if (!svcd?.available || !base?.available) {
        lines.push(`| ${name} | ${direction} | n/a | ≥ ${target} | NOT MEASURED |`);
        allPass = false;
        continue;
      }
      const ratio = svcd.median[direction] / base.median[direction];
      const pass = ratio >= target;
      allPass &&= pass;
      lines.push(
        `| ${name} | ${direction} | ${ratio.toFixed(2)} | ≥ ${target} | ${pass ? 'PASS' : 'FAIL'} |`,
      );
    }
  }
  lines.push('');
  process.stdout.write(`${lines.join('\n')}\n`);
  return allPass;
}

// tls.bench.ts imports the tunnel paths from here; only `npm run bench:tunnel` runs this benchmark.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  let exitCode = 0;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void stopAllChildren().finally(() => process.exit(130));
    });
  }
  try {
    const pass = await main();
    if (!pass && STRICT) exitCode = 1;
  } catch (err) {
    process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    exitCode = 1;
  }
  process.exit(exitCode);
}
