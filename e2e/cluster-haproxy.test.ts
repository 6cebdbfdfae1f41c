/**
 * Three svcd nodes behind haproxy (issue 26): one PostgreSQL database, their own nats-server, and haproxy started
 * with packaging/haproxy/svcd-cluster.cfg (its ports replaced by free ones). Real agents connect through haproxy;
 * every API action that reaches an agent is issued through each node for clients held by the others; then a
 * rolling restart (drain, restart, next) during which multi-client runs lose no job.
 */
import { readFile, writeFile } from 'node:fs/promises';
import type { Server } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createApiClient, type ApiClient } from '../test-support/api-client.js';
import {
  ADMIN,
  clientStates,
  eventually,
  finished,
  finishedRun,
  runOf,
} from '../test-support/cluster-api.js';
import { TestCluster, type ClusterNode } from '../test-support/cluster-harness.js';
import { SVCD_BIN, freePort, parseLog, runProcess, startExecutable } from '../test-support/process.js';
import { roundTrip, startEchoServer } from '../test-support/tcp.js';

const HEARTBEAT_MS = 500;
const HAPROXY = '/usr/sbin/haproxy';
const NODE_IDS = ['svcd-1', 'svcd-2', 'svcd-3'];
const AGENT_IDS = ['agent-1', 'agent-2', 'agent-3'];
/** The ports the shipped haproxy config names: the two frontends, then each node's API and agent listener. */
const SHIPPED = { api: 3000, agents: 8080, nodeApi: [3101, 3102, 3103], nodeAgents: [8181, 8182, 8183] };

let cluster: TestCluster;
let nodes: ClusterNode[];
let echo: Server;
let lb: ApiClient;
let lbAgentPort: number;

/** The shipped haproxy config with its ports replaced by the test's. */
async function haproxyConfig(apiPort: number, agentPort: number): Promise<string> {
  let text = await readFile(new URL('../packaging/haproxy/svcd-cluster.cfg', import.meta.url), 'utf8');
  const swap = (from: string, to: string) => {
    expect(text).toContain(from);
    text = text.replaceAll(from, to);
  };
  swap(`bind *:${SHIPPED.api}`, `bind 127.0.0.1:${apiPort}`);
  swap(`bind *:${SHIPPED.agents}`, `bind 127.0.0.1:${agentPort}`);
  nodes.forEach((node, i) => {
    swap(`127.0.0.1:${SHIPPED.nodeApi[i]} `, `127.0.0.1:${node.apiPort} `);
    swap(`127.0.0.1:${SHIPPED.nodeAgents[i]} `, `127.0.0.1:${node.clientPort} `);
  });
  return text;
}

/** haproxy with the shipped config, answering on its API frontend. */
async function startHaproxy(): Promise<void> {
  const [lbApiPort, agentPort] = [await freePort(), await freePort()];
  lbAgentPort = agentPort;
  const cfg = join(cluster.dir, 'haproxy.cfg');
  await writeFile(cfg, await haproxyConfig(lbApiPort, agentPort));
  // Debian's haproxy (apt-get install haproxy; .ci/run installs it): a missing binary fails here, loudly.
  const check = startExecutable(HAPROXY, ['-c', '-f', cfg]);
  expect((await check.exited).code, check.stderr).toBe(0);
  const haproxy = startExecutable(HAPROXY, ['-db', '-f', cfg]);
  cluster.onClose(() => haproxy.stop());
  lb = createApiClient(`http://127.0.0.1:${lbApiPort}/api/v1`);
  const exited = haproxy.exited.then(({ code }) => {
    throw new Error(`haproxy exited (${code}): ${haproxy.stderr}`);
  });
  exited.catch(() => undefined);
  await Promise.race([
    exited,
    eventually(
      'haproxy answering',
      () => lb.get('/openapi.json').catch(() => ({ status: 0 })),
      (res) => res.status === 200,
    ),
  ]);
}

/** Which node holds each connected client, as the shared clients table says. */
async function owners(): Promise<Record<string, string>> {
  const { settings } = cluster.db;
  const [host, port] = settings.db_host.split(':');
  const client = new pg.Client({
    host,
    port: Number(port ?? 5432),
    user: settings.db_user,
    database: settings.db_name,
  });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string; owner_node: string }>(
      `select id, owner_node from clients where connection_state = 'connected'`,
    );
    return Object.fromEntries(rows.map((r) => [r.id, r.owner_node]));
  } finally {
    await client.end();
  }
}

const nodeAt = (i: number): ClusterNode => {
  const node = nodes[i % nodes.length];
  if (!node) throw new Error(`no node ${i}`);
  return node;
};

/** For each node, the clients held by the other nodes: every cross-node pair. */
async function crossPairs(): Promise<[ClusterNode, string][]> {
  const held = await owners();
  const pairs: [ClusterNode, string][] = [];
  for (const via of nodes)
    for (const clientId of AGENT_IDS)
      if (held[clientId] && held[clientId] !== via.id) pairs.push([via, clientId]);
  return pairs;
}

beforeAll(async () => {
  echo = await startEchoServer();
  cluster = await TestCluster.start({
    name: 'cluster-lb',
    heartbeatMs: HEARTBEAT_MS,
    tunnelPorts: 4,
    api: [
      // The same on every node: a token one node signs is checked by the others.
      'jwt_secret = "cluster-haproxy-jwt-secret-0123456789"',
      // Every request comes from haproxy's address.
      'max_connections_per_address = 0',
      'max_failed_login = 3',
    ],
    cluster: () => ['drain_timeout = "15s"'],
  });
  nodes = await cluster.startNodes(...NODE_IDS);
  await startHaproxy();
  await cluster.createCredential();
  // leastconn spreads them, one agent per node (haproxy counts each connection as it takes it); every node lists
  // them all.
  await Promise.all(AGENT_IDS.map((id) => cluster.startAgent(id, lbAgentPort)));
  await cluster.connected(AGENT_IDS);
  await eventually(
    'one agent per node',
    owners,
    (held) => new Set(AGENT_IDS.map((id) => held[id])).size === 3 && AGENT_IDS.every((id) => held[id]),
  );
}, 240_000);

afterAll(async () => {
  await cluster?.close();
  echo?.close();
});

test('commands and scripts through each node run on the clients the other nodes hold', async () => {
  const pairs = await crossPairs();
  expect(pairs).toHaveLength(6);
  await Promise.all(
    pairs.map(async ([via, clientId]) => {
      const command = await via.api.post(
        `/clients/${clientId}/commands`,
        { command: `/usr/bin/echo ${via.id}-${clientId}` },
        { auth: ADMIN },
      );
      expect(command.status, command.text).toBe(200);
      const script = await via.api.post(
        `/clients/${clientId}/scripts`,
        {
          script: Buffer.from(`echo script-${via.id}-${clientId}\n`).toString('base64'),
          interpreter: '/bin/sh',
        },
        { auth: ADMIN },
      );
      expect(script.status, script.text).toBe(200);
      expect(await finished(via.api, clientId, command.json.data.jid as string)).toMatchObject({
        status: 'successful',
        result: { stdout: `${via.id}-${clientId}\n` },
      });
      expect(await finished(lb, clientId, script.json.data.jid as string)).toMatchObject({
        status: 'successful',
        result: { stdout: `script-${via.id}-${clientId}\n` },
      });
    }),
  );
});

test('a multi-client run through each node covers the clients of all three, one result each', async () => {
  // One run coordinated by each node, side by side.
  await Promise.all(
    nodes.map(async (via) => {
      const res = await via.api.post(
        '/commands',
        { command: `/usr/bin/echo wide-${via.id}`, client_ids: AGENT_IDS, execute_concurrently: true },
        { auth: ADMIN },
      );
      expect(res.status, res.text).toBe(200);
      const run = await finishedRun(via.api, res.json.data.jid as string);
      expect(run.status).toBe('successful');
      expect(run.jobs.map((j) => [j.client_id, j.status, j.result.stdout]).sort()).toEqual(
        AGENT_IDS.map((id) => [id, 'successful', `wide-${via.id}\n`]),
      );
    }),
  );
});

test("a tunnel opened through each node for another node's client carries traffic and is deleted", async () => {
  const remote = `127.0.0.1:${(echo.address() as { port: number }).port}`;
  const pairs = await crossPairs();
  // The clients side by side; one client's two tunnels one after the other (the same target twice at once
  // would be a duplicate).
  await Promise.all(
    AGENT_IDS.map(async (clientId) => {
      for (const [via] of pairs.filter(([, id]) => id === clientId)) {
        const opened = await via.api.request(
          'PUT',
          `/clients/${clientId}/tunnels?${new URLSearchParams({ remote }).toString()}`,
          { auth: ADMIN },
        );
        expect(opened.status, opened.text).toBe(200);
        const tunnel = opened.json.data as { id: string; lport: string };
        const text = `${via.id}>${clientId}`;
        expect(await roundTrip(Number(tunnel.lport), text)).toBe(text);
        const deleted = await via.api.request(
          'DELETE',
          `/clients/${clientId}/tunnels/${tunnel.id}?force=true`,
          { auth: ADMIN },
        );
        expect(deleted.status, deleted.text).toBe(204);
      }
    }),
  );
  expect(pairs).toHaveLength(6);
  expect((await lb.get('/tunnels', { auth: ADMIN })).json.data).toEqual([]);
});

test('deleting a client credential through each node disconnects its client held by another node', async () => {
  // Each node with its own credential and client, side by side.
  const each = nodes.map(async (via, i) => {
    const holder = nodeAt(i + 1);
    const cred = `cred-${via.id}`;
    const created = await via.api.post(
      '/clients-auth',
      { id: cred, password: `${cred}-password` },
      { auth: ADMIN },
    );
    expect(created.status, created.text).toBe(201);
    // Straight to the holding node, past haproxy, so the client is on another node than `via`.
    const clientId = `by-${cred}`;
    const agent = await cluster.startAgent(clientId, holder, { auth: `${cred}:${cred}-password` });
    await cluster.connected([clientId], [via]);
    const removed = await via.api.request('DELETE', `/clients-auth/${cred}?force=true`, { auth: ADMIN });
    expect(removed.status, removed.text).toBe(204);
    await eventually(
      `${clientId} disconnected`,
      () => clientStates(holder.api),
      (states) => states[clientId] === 'disconnected',
    );
    await agent.stop();
  });
  await Promise.all(each);
});

test('a logout through one node holds on every node within 2 s', async () => {
  const token = await nodeAt(0).api.login('admin', 'admin-secret-1');
  for (const node of nodes) expect((await node.api.get('/me', { auth: { bearer: token } })).status).toBe(200);
  const out = await nodeAt(0).api.request('DELETE', '/logout', { auth: { bearer: token } });
  expect(out.status, out.text).toBe(204);
  const loggedOut = Date.now();
  for (const node of nodes.slice(1))
    await eventually(
      `logout seen by ${node.id}`,
      () => node.api.get('/me', { auth: { bearer: token } }),
      (res) => res.status === 401,
      2_000 - (Date.now() - loggedOut),
    );
});

test('the vault is unlocked per node: one unlock opens no other node; each reads what another wrote', async () => {
  const [a, b, c] = [nodeAt(0), nodeAt(1), nodeAt(2)];
  const password = { password: 'vault-password-of-the-cluster' };
  const vaultState = async (via: ClusterNode) =>
    (await via.api.get('/vault-admin', { auth: ADMIN })).json.data as { init: string; status: string };
  expect((await a.api.post('/vault-admin/init', password, { auth: ADMIN })).status).toBe(201);
  expect(await vaultState(a)).toEqual({ init: 'setup-completed', status: 'unlocked' });
  for (const other of [b, c]) {
    expect(await vaultState(other)).toEqual({ init: 'setup-completed', status: 'locked' });
    expect((await other.api.get('/vault', { auth: ADMIN })).status).toBe(409);
  }
  const stored = await a.api.post(
    '/vault',
    { key: 'db', value: 'written-on-a', type: 'secret' },
    { auth: ADMIN },
  );
  expect(stored.status, stored.text).toBe(201);
  expect((await b.api.post('/vault-admin/sesame', password, { auth: ADMIN })).status).toBe(201);
  const read = await b.api.get(`/vault/${stored.json.data.id}`, { auth: ADMIN });
  expect(read.json.data.value).toBe('written-on-a');
  // c was never unlocked.
  expect(await vaultState(c)).toEqual({ init: 'setup-completed', status: 'locked' });
});

test('rolling restart: each node drains (agents move through haproxy), restarts; runs lose no job', async () => {
  for (const [i, node] of nodes.entries()) {
    const coordinator = nodeAt(i + 1);
    const held = await owners();
    const moving = AGENT_IDS.filter((id) => held[id] === node.id);
    // Jobs still running on the agents while they move: their results reach the node they move to.
    const res = await coordinator.api.post(
      '/scripts',
      {
        script: Buffer.from(`sleep 1.5; echo survived-${node.id}\n`).toString('base64'),
        interpreter: '/bin/sh',
        client_ids: AGENT_IDS,
        execute_concurrently: true,
      },
      { auth: ADMIN },
    );
    expect(res.status, res.text).toBe(200);
    const jid = res.json.data.jid as string;
    await eventually(
      `run ${jid} dispatched`,
      () => runOf(coordinator.api, jid),
      (run) => run.jobs.length === AGENT_IDS.length && run.jobs.every((j) => j.status === 'running'),
      5_000,
    );
    // `svcd drain` for this node, run from another node's config (names the node).
    const drain = await runProcess(SVCD_BIN, ['drain', '-c', coordinator.configPath, '--node', node.id]);
    expect(drain.code, drain.stdout).toBe(0);
    expect(drain.stdout).toContain(`${moving.length} of ${moving.length} agents moved`);
    const exit = await node.svcd.exited;
    expect(exit.code).toBe(0);
    const after = await owners();
    for (const id of AGENT_IDS) expect([id, after[id]]).not.toEqual([id, node.id]);
    expect(AGENT_IDS.every((id) => after[id])).toBe(true);

    // The node starts again while the run finishes on the others; the next node drains once it is back.
    await Promise.all([
      cluster.restart(node),
      (async () => {
        const run = await finishedRun(coordinator.api, jid);
        expect(run.status, JSON.stringify(run)).toBe('successful');
        expect(run.jobs.map((j) => j.result.stdout)).toEqual(AGENT_IDS.map(() => `survived-${node.id}\n`));
      })(),
    ]);
  }
  // The restarted cluster still reaches every client through every node.
  for (const [via, clientId] of await crossPairs()) {
    const res = await via.api.post(
      `/clients/${clientId}/commands`,
      { command: '/usr/bin/echo after' },
      { auth: ADMIN },
    );
    expect(res.status, res.text).toBe(200);
    expect(await finished(via.api, clientId, res.json.data.jid as string)).toMatchObject({
      status: 'successful',
    });
  }
}, 240_000);

test('SIGTERM drains a cluster node too', async () => {
  const node = nodeAt(0);
  node.svcd.child.kill('SIGTERM');
  const drained = parseLog(
    await node.svcd.waitForLine((line) => line.includes('drained: every agent moved')),
  );
  expect(drained?.moved).toBe(drained?.clients);
  expect((await node.svcd.exited).code).toBe(0);
  const after = await owners();
  expect(AGENT_IDS.every((id) => after[id] && after[id] !== node.id)).toBe(true);
});

test("a ban decided on one node holds on the others within 2 s (last: it bans the test's own address)", async () => {
  const [decides, other] = [nodeAt(1), nodeAt(2)];
  for (const user of ['nobody-1', 'nobody-2', 'nobody-3']) {
    const res = await decides.api.get('/login', { auth: { basic: [user, 'wrong-password'] } });
    expect(res.status, res.text).toBe(401);
  }
  const banned = Date.now();
  await eventually(
    `ban seen by ${other.id}`,
    () => other.api.get('/login', { auth: ADMIN }),
    (res) => res.status === 423,
    2_000 - (Date.now() - banned),
  );
});
