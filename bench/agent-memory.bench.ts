/**
 * Idle agent memory (issue 18): RSS of an idle svc agent connected to a real svcd, next to a bare node process
 * measured in the same run. Agents: the normal one (node packages/agent/bin/svc.js), the bundled script
 * (node dist-agent/svc.cjs) and the one-file executable (dist-agent/svc), built first. OpenRPort's client is a
 * fixed reference (13.8 MB, measured earlier), not run here.
 *
 *   npm run build && npm run bench:agent-memory
 *
 * Environment: BENCH_SETTLE_SECONDS (60: how long every process idles after connecting before RSS is sampled),
 * BENCH_BUNDLE_NODE_ARGS (node flags for the bundled agent only, e.g. V8 settings to compare),
 * BENCH_STRICT=1 (exit 1 when the target fails).
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BUNDLE, ONE_FILE_AGENT, buildOneFileAgent } from '../scripts/one-file-agent.js';
import { createApiClient } from '../test-support/api-client.js';
import { startSvcdProcess, writeAdminUserFile } from '../test-support/e2e-setup.js';
import {
  SVC_BIN,
  freePort,
  startExecutable,
  startProcess,
  type RunningProcess,
} from '../test-support/process.js';
import { onCleanUp, runBench } from './support/bench-runner.js';
import { envNumber } from './support/child-processes.js';
import { summarize } from './support/latency.js';
import { checksTable, machine, progress, table, writeResult, type Check } from './support/report.js';

const SETTLE_SECONDS = envNumber('BENCH_SETTLE_SECONDS', 60, 3600);
/** Extra node flags for the bundled agent only, to try V8 settings against the others. */
const BUNDLE_NODE_ARGS = (process.env.BENCH_BUNDLE_NODE_ARGS ?? '').split(' ').filter(Boolean);
const SAMPLES = 5;
const MARGIN_MIB = 10;
const OPENRPORT_MIB = 13.8;
const ADMIN = { basic: ['admin', 'admin-secret-1'] as [string, string] };

const rssMiB = (pid: number): number => {
  const kib = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (!kib) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(kib) / 1024;
};

async function main(): Promise<boolean> {
  progress('building the one-file agent');
  await buildOneFileAgent();
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-agent-memory-'));
  onCleanUp(() => rm(dir, { recursive: true, force: true }));
  const [apiPort, clientPort] = [await freePort(), await freePort()];
  await writeAdminUserFile(dir);
  const svcdConf = join(dir, 'svcd.conf');
  await writeFile(
    svcdConf,
    [
      '[server]',
      `address = "127.0.0.1:${clientPort}"`,
      'data_dir = "data"',
      'key_seed = "bench-agent-memory"',
      'auth = "agent:agent-password-1"',
      '[api]',
      `address = "127.0.0.1:${apiPort}"`,
      'auth_file = "users.json"',
    ].join('\n'),
  );
  const running: RunningProcess[] = [];
  onCleanUp(() => Promise.all(running.map((p) => p.stop())).then(() => undefined));
  const svcd = await startSvcdProcess(svcdConf, { cwd: dir });
  running.push(svcd);
  const api = createApiClient(`http://127.0.0.1:${apiPort}/api/v1`);
  const fingerprint = (await api.get('/status', { auth: ADMIN })).json.data.fingerprint as string;
  const agentArgs = (id: string) => [
    ...['--auth', 'agent:agent-password-1', '--id', id, '--fingerprint', fingerprint],
    ...['--data-dir', join(dir, id), '--log-level', 'info', `http://127.0.0.1:${clientPort}`],
  ];
  const env = { SVC_AUTH: undefined, NODE_OPTIONS: undefined, NODE_ENV: undefined };
  const subjects: { name: string; proc: RunningProcess; agent: boolean }[] = [
    {
      name: "bare node -e 'setInterval(()=>{},1e3)'",
      proc: startExecutable(process.execPath, ['-e', 'setInterval(()=>{},1e3)'], { env }),
      agent: false,
    },
    {
      name: 'svc agent (node bin/svc.js)',
      proc: startProcess(SVC_BIN, agentArgs('normal'), { env }),
      agent: true,
    },
    {
      name: `bundled agent (node ${[...BUNDLE_NODE_ARGS, 'svc.cjs'].join(' ')})`,
      proc: startExecutable(process.execPath, [...BUNDLE_NODE_ARGS, BUNDLE, ...agentArgs('bundled')], {
        env,
      }),
      agent: true,
    },
    {
      name: 'one-file agent (dist-agent/svc)',
      proc: startExecutable(ONE_FILE_AGENT, agentArgs('one-file'), { env }),
      agent: true,
    },
  ];
  running.push(...subjects.map((s) => s.proc));
  await Promise.all(subjects.filter((s) => s.agent).map((s) => s.proc.waitForLog('connected to svcd')));
  progress(`all agents connected; idling ${SETTLE_SECONDS} s`);
  await sleep(SETTLE_SECONDS * 1000);
  const samples = subjects.map(() => [] as number[]);
  for (let i = 0; i < SAMPLES; i++) {
    subjects.forEach((s, n) => samples[n]!.push(rssMiB(s.proc.child.pid!)));
    await sleep(1000);
  }
  const rss = samples.map((values) => summarize(values).p50);
  const bare = rss[0]!;
  const rows = subjects.map((s, n) => [
    s.name,
    `${rss[n]!.toFixed(1)} MiB`,
    `${(rss[n]! - bare).toFixed(1)} MiB`,
  ]);
  rows.push(['OpenRPort client (fixed reference, not run)', `${OPENRPORT_MIB} MB`, '']);
  const checks: Check[] = [1, 3].map((n) => ({
    target: `${subjects[n]!.name} idle RSS ≤ bare node + ${MARGIN_MIB} MiB`,
    value: `${rss[n]!.toFixed(1)} MiB`,
    limit: `${(bare + MARGIN_MIB).toFixed(1)} MiB`,
    pass: rss[n]! <= bare + MARGIN_MIB,
  }));
  process.stdout.write(
    `\nIdle RSS after connecting and ${SETTLE_SECONDS} s settled (median of ${SAMPLES} samples)\n`,
  );
  process.stdout.write(`${table(['process', 'RSS', 'over bare node'], rows)}\n\n${checksTable(checks)}\n`);
  const file = await writeResult('agent-memory', {
    machine: machine(),
    settleSeconds: SETTLE_SECONDS,
    rssMiB: Object.fromEntries(subjects.map((s, n) => [s.name, rss[n]])),
    openRPortReferenceMB: OPENRPORT_MIB,
    checks,
  });
  progress(`result written to ${file}`);
  return checks.every((c) => c.pass);
}

await runBench(main, process.env.BENCH_STRICT === '1');
