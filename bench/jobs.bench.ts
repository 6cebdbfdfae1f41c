/**
 * Remote execution on one real agent: the built svcd and a real svc process on 127.0.0.1.
 *
 *   npm run build && npm run bench:jobs
 *
 * 1. One command (`/usr/bin/true`): POST /clients/{id}/commands, then GET the job until its result is stored.
 *    Reference, measured in the same run: one GET /status round trip plus one local spawn of /usr/bin/true.
 *    Target: median ≤ 3 × the reference.
 * 2. A 4 MiB result (stdout of one command) arrives complete; its time is shown next to the same 4 MiB read
 *    through an svcd tunnel of the same agent.
 *
 * Environment: BENCH_JOB_RUNS (default 50) commands in part 1, BENCH_BIG_RUNS (default 5) in part 2,
 * BENCH_STRICT=1 to exit 1 when a target fails.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { ApiClient } from './support/api-client.js';
import { onCleanUp, runBench } from './support/bench-runner.js';
import { envNumber, HOST, startChild } from './support/child-processes.js';
import { summarize } from './support/latency.js';
import { checksTable, loadAverage, machine, progress, table, writeResult } from './support/report.js';
import { API_USER, CLIENT_AUTH, SvcdProcess } from './support/svcd-process.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SVC_BIN = join(ROOT, 'packages/agent/bin/svc.js');
const AGENT_ID = 'bench-jobs';
const BIG_BYTES = 4 * 1024 * 1024;
const JOB_RUNS = Math.round(envNumber('BENCH_JOB_RUNS', 50, 10_000));
const BIG_RUNS = Math.round(envNumber('BENCH_BIG_RUNS', 5, 100));
const STRICT = process.env['BENCH_STRICT'] === '1';
const MAX_RATIO = 3;

interface JobView {
  status: string;
  result: { stdout: string; stdout_truncated: boolean };
}

/** POSTs a command and polls its job until the result is stored; returns ms from POST to the stored result. */
async function runOnce(
  api: ApiClient,
  command: string,
): Promise<{ ms: number; postMs: number; job: JobView }> {
  const started = performance.now();
  const post = await api.request('POST', `/clients/${AGENT_ID}/commands`, { command, timeout_sec: 60 });
  if (post.status !== 200) throw new Error(`POST commands: HTTP ${post.status} ${post.body}`);
  const jid = (JSON.parse(post.body) as { data: { jid: string } }).data.jid;
  for (;;) {
    const { data } = await api.getJson<JobView>(`/clients/${AGENT_ID}/commands/${jid}`);
    if (data.status !== 'running') {
      if (data.status !== 'successful') throw new Error(`job ${jid} ended ${data.status}`);
      return { ms: performance.now() - started, postMs: post.ms, job: data };
    }
  }
}

function spawnTrue(): Promise<number> {
  const started = performance.now();
  return new Promise((done, fail) => {
    const child = spawn('/usr/bin/true', { stdio: 'ignore' });
    child.once('error', fail);
    child.once('exit', () => done(performance.now() - started));
  });
}

/** A TCP server that sends BIG_BYTES to each connection, then closes it. */
async function startBigSender(): Promise<Server> {
  const payload = Buffer.alloc(BIG_BYTES, 'a');
  const server = createServer((socket) => socket.end(payload));
  server.listen(0, HOST);
  await new Promise((done) => server.once('listening', done));
  return server;
}

function readThroughTunnel(port: number): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  return new Promise((done, fail) => {
    let bytes = 0;
    const socket = connect(port, HOST);
    socket.on('data', (chunk: Buffer) => (bytes += chunk.length));
    socket.once('error', fail);
    socket.once('close', () => done({ ms: performance.now() - started, bytes }));
  });
}

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
      '[remote-commands]',
      // The 4 MiB command is a pipeline; the bench allows any command.
      "allow = ['.*']",
      'deny = []',
      '[logging]',
      'log_level = "warn"',
    ].join('\n'),
  );
  startChild('svc agent', process.execPath, [SVC_BIN, '-c', conf], { cwd: workDir });
}

async function main(): Promise<boolean> {
  const workDir = await mkdtemp(join(tmpdir(), 'svc-bench-jobs-'));
  onCleanUp(() => rm(workDir, { recursive: true, force: true }));
  const svcd = new SvcdProcess({ workDir, maxHandshakes: 0, nodeArgs: [] });
  await svcd.start();
  const api = new ApiClient(svcd.apiBase, 2);
  onCleanUp(() => api.close());
  await api.login(API_USER.name, API_USER.password);
  const { data: status } = await api.getJson<{ fingerprint: string }>('/status');
  await startAgent(workDir, svcd, status.fingerprint);
  for (let tries = 0; ; tries++) {
    const answer = await api.get(`/clients/${AGENT_ID}`);
    if (answer.status === 200 && answer.body.includes('"connection_state":"connected"')) break;
    if (tries > 300) throw new Error('the agent did not connect within 30 s');
    await sleep(100);
  }
  progress('agent connected; warming up');
  for (let i = 0; i < 5; i++) await runOnce(api, '/usr/bin/true');

  // Part 1: POST → stored result, against GET /status + a local spawn.
  const statusMs: number[] = [];
  const spawnMs: number[] = [];
  const jobMs: number[] = [];
  const postMs: number[] = [];
  for (let i = 0; i < JOB_RUNS; i++) {
    statusMs.push((await api.get('/status')).ms);
    spawnMs.push(await spawnTrue());
    const one = await runOnce(api, '/usr/bin/true');
    jobMs.push(one.ms);
    postMs.push(one.postMs);
  }
  const reference = summarize(statusMs).p50 + summarize(spawnMs).p50;
  const job = summarize(jobMs);

  // Part 2: 4 MiB as a command result and through a tunnel.
  const sender = await startBigSender();
  onCleanUp(() => void sender.close());
  const senderPort = (sender.address() as { port: number }).port;
  const put = await api.request(
    'PUT',
    `/clients/${AGENT_ID}/tunnels?remote=${HOST}:${senderPort}&check_port=0`,
  );
  if (put.status !== 200) throw new Error(`PUT tunnels: HTTP ${put.status} ${put.body}`);
  const tunnelPort = Number((JSON.parse(put.body) as { data: { lport: string } }).data.lport);
  const bigJobMs: number[] = [];
  const tunnelMs: number[] = [];
  for (let i = 0; i < BIG_RUNS; i++) {
    const big = await runOnce(api, `head -c ${BIG_BYTES} /dev/zero | tr '\\0' a`);
    if (big.job.result.stdout.length !== BIG_BYTES || big.job.result.stdout_truncated)
      throw new Error(`the 4 MiB result arrived with ${big.job.result.stdout.length} bytes`);
    bigJobMs.push(big.ms);
    const viaTunnel = await readThroughTunnel(tunnelPort);
    if (viaTunnel.bytes !== BIG_BYTES) throw new Error(`the tunnel delivered ${viaTunnel.bytes} bytes`);
    tunnelMs.push(viaTunnel.ms);
  }

  const fmt = (ms: number) => ms.toFixed(2);
  const checks = [
    {
      target: `one command, POST to stored result: median ≤ ${MAX_RATIO} × (GET /status + local spawn)`,
      value: `${fmt(job.p50)} ms (${(job.p50 / reference).toFixed(2)} ×)`,
      limit: `${fmt(MAX_RATIO * reference)} ms`,
      pass: job.p50 <= MAX_RATIO * reference,
    },
  ];
  process.stdout.write(
    [
      `remote execution, ${JOB_RUNS} commands and ${BIG_RUNS} × 4 MiB on one real agent (load ${loadAverage()})`,
      table(
        ['measure', 'p50 ms', 'p90 ms', 'max ms'],
        [
          ['GET /status', summarize(statusMs)],
          ['local spawn of /usr/bin/true', summarize(spawnMs)],
          ['POST /usr/bin/true → stored result', job],
          ['  of which the POST (agent started the process)', summarize(postMs)],
          ['4 MiB command result, POST → stored', summarize(bigJobMs)],
          ['4 MiB through a tunnel of the same agent', summarize(tunnelMs)],
        ].map(([name, s]) => {
          const summary = s as ReturnType<typeof summarize>;
          return [name as string, fmt(summary.p50), fmt(summary.p90), fmt(summary.max)];
        }),
      ),
      checksTable(checks),
      '',
    ].join('\n'),
  );
  const file = await writeResult('jobs', {
    machine: machine(),
    runs: { jobs: JOB_RUNS, big: BIG_RUNS },
    referenceMs: reference,
    status: summarize(statusMs),
    spawn: summarize(spawnMs),
    job,
    post: summarize(postMs),
    bigJob: summarize(bigJobMs),
    tunnel: summarize(tunnelMs),
    checks,
  });
  progress(`results written to ${file}`);
  return checks.every((c) => c.pass);
}

await runBench(main, STRICT);
