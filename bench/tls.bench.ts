/**
 * TLS benchmark (issue 17): what HTTPS and wss cost against plain HTTP and ws, in the same run.
 *   1. GET /api/v1/status (Bearer) req/s on an svcd whose API serves HTTPS ([api] cert_file) against one serving
 *      plain HTTP; both built svcd child processes, driven in turn by autocannon (10 connections, keep-alive).
 *   2. Tunnel throughput (one TCP stream each way) through svcd + svc with the agent link over wss
 *      ([server] tls_cert, svc --tls-ca) against ws; the tunnel paths of tunnel.bench.ts.
 * The CA and certificate are made by the bench with the system's openssl (EC P-256, TLS 1.3 negotiated).
 *
 *   npm run build && npm run bench:tls
 *
 * Environment: BENCH_SECONDS (default 10) per /status run, BENCH_TUNNEL_MIB (default 256 here) per transfer,
 * BENCH_TUNNEL_RUNS (default 3), BENCH_STRICT=1 to exit 1 when a target fails.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { makeTestCertificates } from '../test-support/certificates.js';
import { envNumber, freePort, HOST, startChild, stopAllChildren } from './support/child-processes.js';

process.env['BENCH_TUNNEL_MIB'] ??= '256';
const { measure, startSink, startSvcdTunnel } = await import('./tunnel.bench.js');

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SVCD_BIN = join(ROOT, 'packages/server/bin/svcd.js');
const TARGETS = { minHttpsToHttp: 0.6, minWssToWs: 0.8 };
const SECONDS = envNumber('BENCH_SECONDS', 10, 3600);
const STRICT = process.env['BENCH_STRICT'] === '1';
const USER = { name: 'admin', password: 'bench-admin-1234' };
const STARTUP_TIMEOUT_MS = 30_000;

interface Tls {
  cert: string;
  key: string;
  ca: string;
}

/** Starts svcd with a static API user; returns the API base URL once it answers. */
async function startSvcd(workDir: string, name: string, tls?: Tls): Promise<string> {
  const apiPort = await freePort();
  const configPath = join(workDir, `${name}.conf`);
  await writeFile(
    configPath,
    [
      '[server]',
      `address = "${HOST}:0"`,
      `data_dir = ${JSON.stringify(join(workDir, `${name}-data`))}`,
      '[api]',
      `address = "${HOST}:${apiPort}"`,
      `auth = "${USER.name}:${USER.password}"`,
      ...(tls ? [`cert_file = ${JSON.stringify(tls.cert)}`, `key_file = ${JSON.stringify(tls.key)}`] : []),
      '[logging]',
      'log_level = "warn"',
    ].join('\n'),
  );
  const child = startChild(name, process.execPath, [SVCD_BIN, '-c', configPath], { cwd: workDir });
  const api = `${tls ? 'https' : 'http'}://${HOST}:${apiPort}/api/v1`;
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (!child.running) throw new Error(`${name} stopped (${child.describeExit()}):\n${child.tail()}`);
    // curl, so that the bench's own process needs no trust settings for the test CA.
    const ok = await curl([...(tls ? ['--cacert', tls.ca] : []), `${api}/status`]).then(
      () => true,
      () => false,
    );
    if (ok) return api;
    await sleep(200);
  }
  throw new Error(`${name} did not answer within ${STARTUP_TIMEOUT_MS} ms:\n${child.tail()}`);
}

const curl = (args: string[]) => promisify(execFile)('curl', ['-sS', '-o', '/dev/null', ...args]);

/** A Bearer token, from GET /login with the static user. */
async function login(api: string, ca: string | undefined): Promise<string> {
  const { stdout } = await promisify(execFile)('curl', [
    '-sS',
    '-g',
    ...(ca ? ['--cacert', ca] : []),
    '-u',
    `${USER.name}:${USER.password}`,
    `${api}/login?token-lifetime=3600`,
  ]);
  const token = (JSON.parse(stdout) as { data?: { token?: unknown } }).data?.token;
  if (typeof token !== 'string') throw new Error(`login answered without a token: ${stdout}`);
  return token;
}

function load(url: string, token: string, duration: number): Promise<number> {
  return new Promise((done, fail) => {
    autocannon(
      { url, connections: 10, duration, timeout: 10, headers: { authorization: `Bearer ${token}` } },
      (err, result) => {
        if (err) return fail(err);
        if (result.non2xx > 0 || result.errors > 0)
          return fail(new Error(`${url}: ${result.non2xx} non-2xx answers, ${result.errors} errors`));
        done(result.requests.total / result.duration);
      },
    );
  });
}

async function main(): Promise<boolean> {
  const workDir = await mkdtemp(join(tmpdir(), 'svc-tls-bench-'));
  try {
    process.stderr.write(
      `bench: load average ${loadavg()
        .map((n) => n.toFixed(2))
        .join(' ')}\n`,
    );
    const certs = await makeTestCertificates(workDir, 'bench');
    const tls = { cert: certs.serverCert, key: certs.serverKey, ca: certs.caCert };

    const plainApi = await startSvcd(workDir, 'svcd-http');
    const tlsApi = await startSvcd(workDir, 'svcd-https', tls);
    const plainToken = await login(plainApi, undefined);
    const tlsToken = await login(tlsApi, tls.ca);
    // Alternating, so both see the same machine load; the figure is the median of three runs each.
    const rps: Record<'http' | 'https', number[]> = { http: [], https: [] };
    await load(`${plainApi}/status`, plainToken, 2);
    await load(`${tlsApi}/status`, tlsToken, 2);
    for (let run = 0; run < 3; run++) {
      rps.http.push(await load(`${plainApi}/status`, plainToken, SECONDS));
      rps.https.push(await load(`${tlsApi}/status`, tlsToken, SECONDS));
      process.stderr.write(
        `bench: /status run ${run + 1}/3: http ${rps.http.at(-1)?.toFixed(0)} req/s, https ${rps.https.at(-1)?.toFixed(0)} req/s\n`,
      );
    }
    await stopAllChildren();

    await mkdir(join(workDir, 'ws'));
    await mkdir(join(workDir, 'wss'));
    const sink = await startSink();
    const ws = await startSvcdTunnel(join(workDir, 'ws'), sink.port).then((t) =>
      measure('svcd tunnel, agent link over ws', t.port, t.processes),
    );
    await stopAllChildren();
    const sink2 = await startSink();
    const wss = await startSvcdTunnel(join(workDir, 'wss'), sink2.port, tls).then((t) =>
      measure('svcd tunnel, agent link over wss', t.port, t.processes),
    );
    return report(rps, ws.median, wss.median);
  } finally {
    await stopAllChildren();
    await rm(workDir, { recursive: true, force: true });
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

function report(
  rps: Record<'http' | 'https', number[]>,
  ws: Record<'upload' | 'download', number>,
  wss: Record<'upload' | 'download', number>,
): boolean {
  const http = median(rps.http);
  const https = median(rps.https);
  const rows: [string, string, string, number, number][] = [
    [
      'GET /status req/s (10 connections)',
      http.toFixed(0),
      https.toFixed(0),
      https / http,
      TARGETS.minHttpsToHttp,
    ],
    [
      'tunnel upload MiB/s',
      ws.upload.toFixed(0),
      wss.upload.toFixed(0),
      wss.upload / ws.upload,
      TARGETS.minWssToWs,
    ],
    [
      'tunnel download MiB/s',
      ws.download.toFixed(0),
      wss.download.toFixed(0),
      wss.download / ws.download,
      TARGETS.minWssToWs,
    ],
  ];
  const lines = [
    '',
    `TLS 1.3 against plain, same run; /status median of 3 × ${SECONDS} s, tunnel median of ` +
      `${process.env['BENCH_TUNNEL_RUNS'] ?? '3'} × ${process.env['BENCH_TUNNEL_MIB'] ?? ''} MiB each way`,
    '',
    '| measure | plain (HTTP / ws) | TLS (HTTPS / wss) | ratio | target | result |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  let pass = true;
  for (const [name, plain, secure, ratio, target] of rows) {
    const ok = ratio >= target;
    pass &&= ok;
    lines.push(
      `| ${name} | ${plain} | ${secure} | ${ratio.toFixed(2)} | ≥ ${target} | ${ok ? 'PASS' : 'FAIL'} |`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n\n`);
  return pass;
}

let exitCode = 0;
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => void stopAllChildren().finally(() => process.exit(130)));
try {
  if (!(await main()) && STRICT) exitCode = 1;
} catch (err) {
  process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  exitCode = 1;
}
process.exit(exitCode);
