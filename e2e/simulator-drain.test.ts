/**
 * The bench simulator and a draining cluster node (bench/support/load-simulator.ts, used by the idle cluster
 * bench): a node stopped with SIGTERM asks its agents to `reconnect`; simulated agents then go on to their
 * fallback node at once, as the real agent does, without drawing a backoff delay, and the simulator counts where
 * they are connected.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { LoadSimulator, type SimulatorStats } from '../bench/support/load-simulator.js';
import { untilStats } from '../test-support/simulator-stats.js';
import { TestCluster, type ClusterNode } from '../test-support/cluster-harness.js';

const AGENTS = 4;
const CREDENTIAL = { id: 'sim-drain', password: 'sim-drain-password-1' };

let cluster: TestCluster;
let a: ClusterNode;
let b: ClusterNode;
let simulator: LoadSimulator | undefined;

const urlOf = (node: ClusterNode) => `ws://127.0.0.1:${node.clientPort}`;

beforeAll(async () => {
  cluster = await TestCluster.start({
    name: 'sim-drain',
    heartbeatMs: 1_000,
    cluster: () => ['drain_timeout = "20s"'],
  });
  [a, b] = (await cluster.startNodes('node-a', 'node-b')) as [ClusterNode, ClusterNode];
  await cluster.createCredential(CREDENTIAL.id, CREDENTIAL.password);
});

afterAll(async () => {
  await simulator?.stop();
  await cluster?.close();
});

const until = (done: (s: SimulatorStats) => boolean) => untilStats(simulator as LoadSimulator, done);

test('asked to reconnect by a draining node, simulated agents move to the other at once', async () => {
  simulator = new LoadSimulator({
    url: urlOf(a),
    fallbackUrls: [urlOf(b)],
    authId: CREDENTIAL.id,
    password: CREDENTIAL.password,
    fingerprint: cluster.fingerprint,
    idPrefix: 'drain-',
    count: AGENTS,
    startConcurrency: AGENTS,
  });
  void simulator.start();
  const held = await until((s) => s.connected === AGENTS);
  expect(held.connectedByUrl).toEqual({ [urlOf(a)]: AGENTS });
  expect(held.maxDelayMs).toBe(0);

  const drained = a.svcd.waitForLog('drained: every agent moved to another node', 30_000);
  const exit = await cluster.stop(a);
  expect(exit.code).toBe(0);
  expect(await drained).toMatchObject({ clients: AGENTS, moved: AGENTS, not_moved: 0 });
  const moved = await until((s) => s.connectedByUrl[urlOf(b)] === AGENTS);
  expect(moved.connectedByUrl[urlOf(a)]).toBe(0);
  expect(moved.reconnectsAsked).toBe(AGENTS);
  // No backoff was drawn: each went on to the other node right after svcd's `reconnect`.
  expect(moved.maxDelayMs).toBe(0);
  expect(moved.connected).toBe(AGENTS);
});
