/**
 * After tunnel traffic a real svc process gives its memory back: young-generation collections while it relays,
 * then, once the traffic has stopped, two full collections, reported in its debug log; after jobs that grew it
 * the latter.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { ApiClient } from '../test-support/api-client.js';
import { startE2eSvcd } from '../test-support/e2e-setup.js';
import { startEchoServer } from '../test-support/tcp.js';
import { SVC_BIN, freePort, parseLog, startProcess, type RunningProcess } from '../test-support/process.js';

const ADMIN = { basic: ['admin', 'admin-secret-1'] as [string, string] };
const CLIENT_ID = 'tunnel-memory';
const MIB = 1024 * 1024;
const RECLAIMED =
  'gave back the memory of tunnel traffic and jobs (two full garbage collections, C heap trim)';

let dir: string;
let api: ApiClient;
let svcd: RunningProcess | undefined;
let agent: RunningProcess | undefined;
let echo: Server | undefined;
let startAgent: (id: string) => RunningProcess;
const agents: RunningProcess[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-tunnel-memory-'));
  echo = await startEchoServer();
  const [apiPort, clientPort] = [await freePort(), await freePort()];
  const started = await startE2eSvcd(
    dir,
    {
      clientPort,
      apiPort,
      keySeed: 'e2e-tunnel-memory-seed',
      server: ['auth = "agent:agent-password-1"'],
    },
    { cwd: dir },
  );
  ({ svcd, api } = started);
  const { fingerprint } = started;
  startAgent = (id) => {
    const started = startProcess(
      SVC_BIN,
      [
        ...['--auth', 'agent:agent-password-1', '--id', id, '--fingerprint', fingerprint],
        ...['--data-dir', join(dir, id), '--log-level', 'debug', `http://127.0.0.1:${clientPort}`],
      ],
      { env: { SVC_AUTH: undefined, NODE_OPTIONS: undefined } },
    );
    agents.push(started);
    return started;
  };
  agent = startAgent(CLIENT_ID);
  await agent.waitForLog('connected to svcd');
});

afterAll(async () => {
  for (const started of agents) await started.stop();
  await svcd?.stop();
  echo?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Sends `data` through 127.0.0.1:`port`, half-closes, and resolves with the number of bytes that came back. */
function echoedBytes(port: number, data: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    let received = 0;
    socket.on('data', (chunk: Buffer) => (received += chunk.length));
    socket.once('end', () => {
      socket.destroy();
      resolve(received);
    });
    socket.once('error', reject);
    socket.end(data);
  });
}

test('after tunnel traffic stops, svc collects its garbage and logs what it gave back', async () => {
  const echoPort = (echo!.address() as AddressInfo).port;
  const query = new URLSearchParams({ remote: `127.0.0.1:${echoPort}`, 'skip-idle-timeout': 'true' });
  const res = await api.request('PUT', `/clients/${CLIENT_ID}/tunnels?${query.toString()}`, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  const port = Number(res.json.data.lport);
  // 16 MiB each way: the agent relays 32 MiB, several young-generation collections' worth.
  const data = randomBytes(16 * MIB);
  expect(await echoedBytes(port, data)).toBe(data.length);
  // The first tunnel traffic loaded ssh2's native crypto (the ciphers switched to it mid-stream) and kept glibc's
  // malloc thresholds; an idle agent has neither.
  const prepared = await agent!.waitForLog('prepared for tunnel traffic and jobs');
  expect(prepared.native_crypto).toBe(true);
  expect(prepared.malloc_thresholds_kept).toBe(true);
  const line = await agent!.waitForLog(RECLAIMED);
  expect(line.young_collections).toBeGreaterThanOrEqual(1);
  expect(line.jobs).toBe(0);
  expect(line.pauses_ms).toEqual([expect.any(Number), expect.any(Number)]);
  // @svc/malloc-trim is built by npm ci here (glibc, a compiler): the agent loaded it and trimmed.
  expect(line.trim_ms).toEqual(expect.any(Number));
  expect(line.rss_mib).toEqual([expect.any(Number), expect.any(Number)]);
}, 60_000);

const LEFT_ALONE = 'left the memory of tunnel traffic and jobs to the next reclaim: RSS grew little';

/** Runs `command` on an agent and resolves once its log says the command ended. */
async function runCommand(command: string, on = agent!, clientId = CLIENT_ID): Promise<void> {
  const post = await api.post(`/clients/${clientId}/commands`, { command, timeout_sec: 60 }, { auth: ADMIN });
  expect(post.status, post.text).toBe(200);
  const jid = String(post.json.data.jid);
  await on.waitForLine((text) => {
    const log = parseLog(text);
    return log?.msg === 'command ended' && log.jid === jid;
  });
}

/** The first log line with `msg` written at or after `since` (an ISO time). */
function logSince(msg: string, since: string) {
  return agent!
    .waitForLine((text) => {
      const log = parseLog(text);
      return log?.msg === msg && String(log.time) >= since;
    })
    .then((line) => parseLog(line) ?? {});
}

test('a small command leaves the memory to a later reclaim; a command that grew the agent gets one', async () => {
  // The tunnel test's reclaim is the last one; wait for it when this test runs alone.
  await agent!.waitForLog(RECLAIMED);
  const since = new Date().toISOString();
  await runCommand('/usr/bin/true');
  const leftAlone = await logSince(LEFT_ALONE, since);
  expect(leftAlone.growth_mib).toBeLessThan(2);
  // 64 MiB of output through the agent's pipes: its C heap and young generation grow by more than 2 MiB.
  await runCommand('/usr/bin/head -c 67108864 /dev/zero');
  const reclaimed = await logSince(RECLAIMED, since);
  // Both commands since the last reclaim: the small one did not get one of its own.
  expect(reclaimed.jobs).toBe(2);
  expect(reclaimed.young_collections).toBe(0);
}, 60_000);

test('the first command on a fresh agent runs without loading native code; its reclaim prepares for more', async () => {
  const fresh = startAgent('first-command');
  await fresh.waitForLog('connected to svcd');
  await runCommand('/usr/bin/true', fresh, 'first-command');
  const indexOf = (msg: string) => fresh.stdoutLines.findIndex((line) => parseLog(line)?.msg === msg);
  const ended = indexOf('command ended');
  await fresh.waitForLog(RECLAIMED);
  const prepared = await fresh.waitForLog('prepared for tunnel traffic and jobs');
  expect(prepared.native_crypto).toBe(true);
  // ssh2's native crypto and the malloc addon were loaded after the reclaim, not in the command's path.
  expect(indexOf('prepared for tunnel traffic and jobs')).toBeGreaterThan(indexOf(RECLAIMED));
  expect(indexOf(RECLAIMED)).toBeGreaterThan(ended);
}, 60_000);
