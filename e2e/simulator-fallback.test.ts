/**
 * The bench simulator's fallback URLs (bench/support/load-simulator.ts, used by the cluster bench): simulated
 * agents on one svcd move to the other once it is killed, and stay where they are while it runs. Two plain svcd
 * with one host key (the same key_seed), as cluster nodes share it.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { LoadSimulator, type SimulatorStats } from '../bench/support/load-simulator.js';
import { untilStats } from '../test-support/simulator-stats.js';
import type { ApiClient } from '../test-support/api-client.js';
import { E2E_ADMIN, startE2eSvcdOnFreePorts } from '../test-support/e2e-setup.js';
import type { RunningProcess } from '../test-support/process.js';

const AGENT_AUTH = { id: 'sim', password: 'sim-password-1' };
const ADMIN = { auth: { basic: [E2E_ADMIN.username, E2E_ADMIN.password] as [string, string] } };
const AGENTS = 6;

interface Server {
  svcd: RunningProcess;
  api: ApiClient;
  url: string;
  fingerprint: string;
}

let dir: string;
let first: Server;
let second: Server;
let simulator: LoadSimulator | undefined;

async function startServer(name: string): Promise<Server> {
  const serverDir = join(dir, name);
  await mkdir(serverDir);
  const started = await startE2eSvcdOnFreePorts(serverDir, {
    keySeed: 'simulator-fallback-seed',
    server: [`auth = "${AGENT_AUTH.id}:${AGENT_AUTH.password}"`],
  });
  return { ...started, url: `ws://127.0.0.1:${started.clientPort}` };
}

const until = (done: (s: SimulatorStats) => boolean) => untilStats(simulator as LoadSimulator, done);

const connectedOn = async (server: Server): Promise<number> => {
  const res = await server.api.get('/status', ADMIN);
  expect(res.status, res.text).toBe(200);
  return res.json.data.clients_connected as number;
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-sim-fallback-'));
  [first, second] = await Promise.all([startServer('first'), startServer('second')]);
});

afterAll(async () => {
  await simulator?.stop();
  await first?.svcd.stop();
  await second?.svcd.stop();
  await rm(dir, { recursive: true, force: true });
});

test('simulated agents stay on their svcd, and move to the fallback once it is killed', async () => {
  expect(first.fingerprint).toBe(second.fingerprint);
  simulator = new LoadSimulator({
    url: first.url,
    fallbackUrls: [second.url],
    authId: AGENT_AUTH.id,
    password: AGENT_AUTH.password,
    fingerprint: first.fingerprint,
    idPrefix: 'fallback-',
    count: AGENTS,
    startConcurrency: AGENTS,
  });
  void simulator.start();
  await until((s) => s.connected === AGENTS);
  await expect.poll(() => connectedOn(first), { timeout: 10_000 }).toBe(AGENTS);
  expect(await connectedOn(second)).toBe(0);

  simulator.mark();
  first.svcd.child.kill('SIGKILL');
  await first.svcd.exited;
  const moved = await until((s) => s.connectedSinceMark === AGENTS);
  expect(moved.disconnects).toBe(AGENTS);
  await expect.poll(() => connectedOn(second), { timeout: 10_000 }).toBe(AGENTS);
});
