/**
 * svcd at its open-file limit (issue 30): a real svcd under `prlimit`, filled with simulated agents (the bench's
 * simulator speaks the real link) and raw connections. It must raise its soft limit to the hard one, refuse the
 * agents beyond the limit less its reserve with 503, survive running out of descriptors altogether, keep serving
 * its API and its connected agents meanwhile, and accept again once descriptors are free.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { LoadSimulator, type SimulatorStats } from '../bench/support/load-simulator.js';
import {
  E2E_ADMIN,
  svcdFingerprint,
  writeAdminUserFile,
  writeSvcdConfig,
} from '../test-support/e2e-setup.js';
import { createApiClient, basicHeader, type ApiClient } from '../test-support/api-client.js';
import { AGENT_UPGRADE_REQUEST, openRaw } from '../test-support/raw-http.js';
import {
  SVCD_BIN,
  freePort,
  parseLog,
  startExecutable,
  type RunningProcess,
} from '../test-support/process.js';

const SOFT_LIMIT = 256;
const HARD_LIMIT = 400;
/** More than fit under 400 descriptors less svcd's reserve (64) and its own files and listeners. */
const AGENTS = 400;
const AGENT_AUTH = { id: 'fleet', password: 'fleet-password-1' };
const ADMIN_AUTH = { basic: [E2E_ADMIN.username, E2E_ADMIN.password] as [string, string] };

let dir: string;
let svcd: RunningProcess;
let api: ApiClient;
let agentPort: number;
let apiPort: number;
let fingerprint: string;
const simulators: LoadSimulator[] = [];
const rawSockets: Socket[] = [];

/** One HTTP connection kept open across requests: it still works when svcd cannot accept another. */
const keptConnection = new Agent({ keepAlive: true, maxSockets: 1 });

function getOnKeptConnection(
  path: string,
): Promise<{ status: number; json: { data: Record<string, number> } }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: apiPort,
        path: `/api/v1${path}`,
        agent: keptConnection,
        headers: { authorization: basicHeader(...ADMIN_AUTH.basic) },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(body) }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function simulator(idPrefix: string, count: number): LoadSimulator {
  const fleet = new LoadSimulator({
    url: `ws://127.0.0.1:${agentPort}`,
    authId: AGENT_AUTH.id,
    password: AGENT_AUTH.password,
    fingerprint,
    idPrefix,
    count,
    startConcurrency: 16,
    // Short retries keep the refused agents knocking while the test runs.
    maxRetryIntervalMs: 2_000,
  });
  simulators.push(fleet);
  void fleet.start();
  return fleet;
}

/** Resolves once `done` holds for the simulator's counters (checked as they change, every 50 ms). */
async function until(fleet: LoadSimulator, done: (s: SimulatorStats) => boolean, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!done(fleet.snapshot())) {
    if (Date.now() > deadline) throw new Error(`timed out; simulator: ${JSON.stringify(fleet.snapshot())}`);
    if (svcd.child.exitCode !== null) throw new Error(`svcd exited: ${svcd.stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return fleet.snapshot();
}

/** GET /status on the kept connection until `done` holds for its data (every 50 ms, at most 20 s). */
async function statusUntil(done: (data: Record<string, number>) => boolean) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const { status, json } = await getOnKeptConnection('/status');
    expect(status).toBe(200);
    if (done(json.data) || Date.now() > deadline) return json.data;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Opens `count` raw TCP connections to `port`; resolves when each is connected or already cut by svcd. */
function holdRaw(port: number, count: number): Promise<void> {
  const opened = Array.from(
    { length: count },
    () =>
      new Promise<void>((resolve) => {
        const socket = connect(port, '127.0.0.1');
        rawSockets.push(socket);
        socket.once('connect', () => resolve());
        socket.once('error', () => resolve());
        socket.once('close', () => resolve());
      }),
  );
  return Promise.all(opened).then(() => undefined);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-fd-limit-'));
  await writeAdminUserFile(dir);
  agentPort = await freePort();
  apiPort = await freePort();
  const configPath = await writeSvcdConfig(dir, {
    clientPort: agentPort,
    apiPort,
    keySeed: 'fd-limit-seed',
    // The raw connections that exhaust the descriptors must stay until the reclaim after the agents' burst (10 s
    // of quiet) has read /proc: on the agent port until upgrade_timeout, on the API until read_header_timeout.
    server: [`auth = "${AGENT_AUTH.id}:${AGENT_AUTH.password}"`, 'upgrade_timeout = "120s"'],
    api: ['read_header_timeout = "120s"', 'read_timeout = "120s"'],
  });
  svcd = startExecutable('prlimit', [
    `--nofile=${SOFT_LIMIT}:${HARD_LIMIT}`,
    process.execPath,
    SVCD_BIN,
    '-c',
    configPath,
  ]);
  await svcd.waitForLog('API listening');
  api = createApiClient(`http://127.0.0.1:${apiPort}/api/v1`);
  fingerprint = await svcdFingerprint(api);
});

afterAll(async () => {
  for (const socket of rawSockets) socket.destroy();
  await Promise.all(simulators.map((fleet) => fleet.stop()));
  keptConnection.destroy();
  await svcd?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('svcd at its open-file limit', () => {
  test('runs with its soft limit raised to the hard one and says how many agents that allows', async () => {
    const logged = await svcd.waitForLog('open-file limit');
    expect(logged).toMatchObject({ soft: HARD_LIMIT, hard: HARD_LIMIT });
    const warning = await svcd.waitForLine((line) =>
      /caps svcd at \d+ agents/.test(parseLog(line)?.msg ?? ''),
    );
    expect(parseLog(warning)?.agents_at_most).toBe(HARD_LIMIT - 64);
    const status = await api.get('/status', { auth: ADMIN_AUTH });
    expect(status.json.data).toMatchObject({
      descriptors_limit: HARD_LIMIT,
      descriptors_agent_high_water: HARD_LIMIT - 64,
    });
    expect(status.json.data.descriptors_used).toBeGreaterThan(0);
  });

  test('fills up to the limit less the reserve, refuses further agents with 503, and stays up without descriptors', async () => {
    // The kept connection is opened now, while descriptors are free.
    expect((await getOnKeptConnection('/status')).status).toBe(200);
    const fleet = simulator('full-', AGENTS);
    const full = await until(fleet, (s) => (s.failures['busy (HTTP 503)'] ?? 0) > 0);
    const connected = (await getOnKeptConnection('/status')).json.data;
    expect(connected.clients_connected).toBeGreaterThan(HARD_LIMIT / 2);
    expect(connected.clients_connected).toBeLessThan(AGENTS);
    expect(connected.descriptors_used).toBeLessThanOrEqual(HARD_LIMIT);
    expect(full.connected).toBeLessThanOrEqual(connected.descriptors_agent_high_water!);
    // What the next agent is told: 503 with a Retry-After (agents back off on it) and why.
    const next = await (await openRaw(agentPort, AGENT_UPGRADE_REQUEST)).closed;
    expect(next.received).toMatch(/^HTTP\/1\.1 503 /);
    expect(next.received).toMatch(/\r\nretry-after: 30\r\n/i);
    expect(next.received).toContain('svcd holds as many agents as its open-file limit allows; retry later');

    // Raw connections to the agent port are cut once half the reserve is reached; those to the API take the rest,
    // until accepting fails for want of descriptors.
    await holdRaw(agentPort, 100);
    await holdRaw(apiPort, 150);
    // svcd accepts them a little after the client sees them connected; its count is at most 250 ms old.
    const exhausted = await statusUntil((data) => data.descriptors_used === HARD_LIMIT);
    expect(exhausted.descriptors_used).toBe(HARD_LIMIT);

    // The memory reclaim after the connect burst reads /proc (it used to crash svcd here): it reports without RSS.
    // Meanwhile the kept connection is used every second: idle for svcd's keep-alive timeout, it would be closed
    // and free a descriptor.
    const reclaimed = svcd.waitForLog(
      'gave back the memory of a large multi-client run or a burst of agent connections (two full garbage collections, C heap trim)',
    );
    let waiting = true;
    const keepBusy = (async () => {
      while (waiting) {
        expect((await getOnKeptConnection('/status')).json.data.descriptors_used).toBe(HARD_LIMIT);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    })();
    const reclaim = await reclaimed.finally(() => (waiting = false));
    await keepBusy;
    expect(reclaim.rss_mib).toContain(null);

    // The connected agents are still served: every one answers a ping round trip through svcd's control peer.
    const round = await fleet.pingRound(10_000);
    expect(round.sent).toBe(fleet.snapshot().connected);
    expect(round.failed).toBe(0);
    expect(svcd.child.exitCode).toBeNull();
    const refusals = await getOnKeptConnection('/status');
    expect(refusals.json.data.clients_connected).toBe(fleet.snapshot().connected);
  }, 120_000);

  test('accepts API requests and agents again once descriptors are free', async () => {
    for (const socket of rawSockets) socket.destroy();
    await Promise.all(simulators.map((fleet) => fleet.stop()));
    const status = await api.get('/status', { auth: ADMIN_AUTH });
    expect(status.status).toBe(200);
    const again = simulator('again-', 10);
    await until(again, (s) => s.connected === 10);
    const after = await api.get('/status', { auth: ADMIN_AUTH });
    expect(after.json.data.clients_connected).toBe(10);
    expect(after.json.data.descriptors_used).toBeLessThan(after.json.data.descriptors_agent_high_water);
  }, 60_000);
});
