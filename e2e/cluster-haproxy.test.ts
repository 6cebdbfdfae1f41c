/**
 * Three svcd nodes behind haproxy (issue 26): one PostgreSQL database, their own nats-server, and haproxy started
 * with packaging/haproxy/svcd-cluster.cfg (its ports replaced by free ones). Real agents connect through haproxy;
 * every API action that reaches an agent is issued through each node for clients held by the others; then a
 * rolling restart (drain, restart, next) during which multi-client runs lose no job.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createApiClient, type ApiClient } from '../test-support/api-client.js';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../test-support/databases.js';
import { writeAdminUserFile } from '../test-support/e2e-setup.js';
import { startTestNats, type TestNats } from '../test-support/nats.js';
import {
  SVCD_BIN,
  SVC_BIN,
  freePort,
  freePortBlock,
  parseLog,
  runProcess,
  startExecutable,
  startProcess,
  type RunningProcess,
} from '../test-support/process.js';

const ADMIN = { basic: ['admin', 'admin-secret-1'] as [string, string] };
const HEARTBEAT_MS = 500;
const HAPROXY = '/usr/sbin/haproxy';
const START_TIMEOUT_MS = 60_000;
const NODE_IDS = ['svcd-1', 'svcd-2', 'svcd-3'];
const AGENT_IDS = ['agent-1', 'agent-2', 'agent-3'];
/** The ports the shipped haproxy config names: the two frontends, then each node's API and agent listener. */
const SHIPPED = { api: 3000, agents: 8080, nodeApi: [3101, 3102, 3103], nodeAgents: [8181, 8182, 8183] };

interface Node {
  id: string;
  configPath: string;
  apiPort: number;
  clientPort: number;
  svcd: RunningProcess;
  api: ApiClient;
}

let dir: string;
let db: TestDatabase;
let nats: TestNats;
let haproxy: RunningProcess;
let fingerprint: string;
let echo: Server;
let echoPort: number;
let lb: ApiClient;
let lbAgentPort: number;
const nodes: Node[] = [];
const processes: RunningProcess[] = [];

async function writeNodeConfig(id: string, apiPort: number, clientPort: number): Promise<string> {
  const nodeDir = join(dir, id);
  await mkdir(nodeDir, { recursive: true });
  await writeAdminUserFile(nodeDir);
  const tunnelPorts = await freePortBlock(4);
  const { settings } = db;
  const config = [
    '[server]',
    `address = "127.0.0.1:${clientPort}"`,
    'data_dir = "data"',
    'key_seed = "cluster-haproxy-seed"',
    'auth_table = "clients_auth"',
    `used_ports = ["${tunnelPorts}-${tunnelPorts + 3}"]`,
    '[api]',
    `address = "127.0.0.1:${apiPort}"`,
    'auth_file = "users.json"',
    // The same on every node: a token one node signs is checked by the others.
    'jwt_secret = "cluster-haproxy-jwt-secret-0123456789"',
    // Every request comes from haproxy's address.
    'max_connections_per_address = 0',
    'max_failed_login = 3',
    '[database]',
    `db_type = "${settings.db_type}"`,
    `db_name = "${settings.db_name}"`,
    `db_host = "${settings.db_host}"`,
    `db_user = "${settings.db_user}"`,
    '[cluster]',
    'enabled = true',
    `node_id = "${id}"`,
    `nats_url = "${nats.url}"`,
    `heartbeat_interval = "${HEARTBEAT_MS}ms"`,
    'drain_timeout = "15s"',
  ];
  const path = join(nodeDir, 'svcd.conf');
  await writeFile(path, config.join('\n'));
  return path;
}

async function startNode(node: Omit<Node, 'svcd'>): Promise<Node> {
  const svcd = startProcess(SVCD_BIN, ['-c', node.configPath], { cwd: join(dir, node.id) });
  processes.push(svcd);
  // A restart during the rolling upgrade shares two cores with three nodes, haproxy and the agents.
  await svcd.waitForLog('API listening', START_TIMEOUT_MS);
  fingerprint = String((await svcd.waitForLog('client listener started')).fingerprint);
  return { ...node, svcd };
}

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

async function startAgent(clientId: string, serverPort: number, auth = 'agent:agent-password-1') {
  const conf = join(dir, `${clientId}.conf`);
  await writeFile(
    conf,
    [
      '[client]',
      `server = "http://127.0.0.1:${serverPort}"`,
      `auth = "${auth}"`,
      `id = "${clientId}"`,
      `fingerprint = "${fingerprint}"`,
      `data_dir = "${join(dir, `${clientId}-data`)}"`,
    ].join('\n'),
  );
  const agent = startProcess(SVC_BIN, ['-c', conf], { env: { SVC_AUTH: undefined } });
  processes.push(agent);
  await agent.waitForLog('connected to svcd');
  return agent;
}

/** Polls (bounded) until `check` passes: the API offers no event for another node's change. */
async function eventually<T>(
  what: string,
  read: () => Promise<T>,
  check: (value: T) => boolean,
  withinMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`${what} not reached within ${withinMs} ms: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function clientStates(via: Node): Promise<Record<string, string>> {
  const res = await via.api.get('/clients?fields[clients]=id,connection_state', { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  const data = res.json.data as { id: string; connection_state: string }[];
  return Object.fromEntries(data.map((c) => [c.id, c.connection_state]));
}

/** Which node holds each connected client, as the shared clients table says. */
async function owners(): Promise<Record<string, string>> {
  const [host, port] = db.settings.db_host.split(':');
  const client = new pg.Client({
    host,
    port: Number(port ?? 5432),
    user: db.settings.db_user,
    database: db.settings.db_name,
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

async function finishedJob(via: ApiClient, clientId: string, jid: string) {
  return eventually(
    `job ${jid} on ${clientId}`,
    async () => {
      const res = await via.get(`/clients/${clientId}/commands/${jid}`, { auth: ADMIN });
      expect(res.status, res.text).toBe(200);
      return res.json.data as { status: string; error: string; result: { stdout: string } };
    },
    (job) => job.status !== 'running',
  );
}

type Run = { status: string; jobs: { client_id: string; status: string; result: { stdout: string } }[] };

async function finishedRun(via: ApiClient, jid: string, withinMs = 20_000): Promise<Run> {
  return eventually(
    `run ${jid}`,
    async () => {
      const res = await via.get(`/commands/${jid}`, { auth: ADMIN });
      expect(res.status, res.text).toBe(200);
      return res.json.data as Run;
    },
    (run) => run.status !== 'running',
    withinMs,
  );
}

const nodeAt = (i: number): Node => {
  const node = nodes[i % nodes.length];
  if (!node) throw new Error(`no node ${i}`);
  return node;
};

function roundTrip(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    let got = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      got += chunk;
      if (got.length >= text.length) {
        socket.end();
        resolve(got);
      }
    });
    socket.once('error', reject);
  });
}

/** For each node, the clients held by the other nodes: every cross-node pair. */
async function crossPairs(): Promise<[Node, string][]> {
  const held = await owners();
  const pairs: [Node, string][] = [];
  for (const via of nodes)
    for (const clientId of AGENT_IDS)
      if (held[clientId] && held[clientId] !== via.id) pairs.push([via, clientId]);
  return pairs;
}

beforeAll(async () => {
  echo = createServer((socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  echoPort = (echo.address() as { port: number }).port;
  dir = await mkdtemp(join(tmpdir(), 'svc-cluster-lb-'));
  [db, nats] = await Promise.all([createTestDatabase('postgres'), startTestNats()]);
  // One after the other: the first creates the schema.
  for (const id of NODE_IDS) {
    const [apiPort, clientPort] = [await freePort(), await freePort()];
    const configPath = await writeNodeConfig(id, apiPort, clientPort);
    nodes.push(
      await startNode({
        id,
        configPath,
        apiPort,
        clientPort,
        api: createApiClient(`http://127.0.0.1:${apiPort}/api/v1`),
      }),
    );
  }
  const [lbApiPort, agentPort] = [await freePort(), await freePort()];
  lbAgentPort = agentPort;
  const cfg = join(dir, 'haproxy.cfg');
  await writeFile(cfg, await haproxyConfig(lbApiPort, agentPort));
  // Debian's haproxy (apt-get install haproxy; .ci/run installs it): a missing binary fails here, loudly.
  const check = startExecutable(HAPROXY, ['-c', '-f', cfg]);
  expect((await check.exited).code, check.stderr).toBe(0);
  haproxy = startExecutable(HAPROXY, ['-db', '-f', cfg]);
  processes.push(haproxy);
  lb = createApiClient(`http://127.0.0.1:${lbApiPort}/api/v1`);
  // haproxy is up once it answers on its API frontend.
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
  const res = await lb.post('/clients-auth', { id: 'agent', password: 'agent-password-1' }, { auth: ADMIN });
  expect(res.status, res.text).toBe(201);
  for (const id of AGENT_IDS) await startAgent(id, lbAgentPort);
  // leastconn spreads them: one agent per node; every node lists them all.
  for (const node of nodes)
    await eventually(
      `${node.id} listing the agents`,
      () => clientStates(node),
      (states) => AGENT_IDS.every((id) => states[id] === 'connected'),
    );
  await eventually(
    'one agent per node',
    owners,
    (held) => new Set(AGENT_IDS.map((id) => held[id])).size === 3 && AGENT_IDS.every((id) => held[id]),
  );
}, 240_000);

afterAll(async () => {
  for (const proc of processes.reverse()) await proc.stop();
  echo?.close();
  await nats?.stop();
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
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
      expect(await finishedJob(via.api, clientId, command.json.data.jid as string)).toMatchObject({
        status: 'successful',
        result: { stdout: `${via.id}-${clientId}\n` },
      });
      expect(await finishedJob(lb, clientId, script.json.data.jid as string)).toMatchObject({
        status: 'successful',
        result: { stdout: `script-${via.id}-${clientId}\n` },
      });
    }),
  );
});

test('a multi-client run through each node covers the clients of all three, one result each', async () => {
  for (const via of nodes) {
    const res = await via.api.post(
      '/commands',
      { command: '/usr/bin/echo wide', client_ids: AGENT_IDS, execute_concurrently: true },
      { auth: ADMIN },
    );
    expect(res.status, res.text).toBe(200);
    const run = await finishedRun(via.api, res.json.data.jid as string);
    expect(run.status).toBe('successful');
    expect(run.jobs.map((j) => [j.client_id, j.status, j.result.stdout]).sort()).toEqual(
      AGENT_IDS.map((id) => [id, 'successful', 'wide\n']),
    );
  }
});

test("a tunnel opened through each node for another node's client carries traffic and is deleted", async () => {
  for (const [via, clientId] of await crossPairs()) {
    const opened = await via.api.request(
      'PUT',
      `/clients/${clientId}/tunnels?${new URLSearchParams({ remote: `127.0.0.1:${echoPort}` }).toString()}`,
      { auth: ADMIN },
    );
    expect(opened.status, opened.text).toBe(200);
    const tunnel = opened.json.data as { id: string; lport: string };
    expect(await roundTrip(Number(tunnel.lport), `${via.id}>${clientId}`)).toBe(`${via.id}>${clientId}`);
    const deleted = await via.api.request('DELETE', `/clients/${clientId}/tunnels/${tunnel.id}?force=true`, {
      auth: ADMIN,
    });
    expect(deleted.status, deleted.text).toBe(204);
  }
  expect((await lb.get('/tunnels', { auth: ADMIN })).json.data).toEqual([]);
});

test('deleting a client credential through each node disconnects its client held by another node', async () => {
  for (const [i, via] of nodes.entries()) {
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
    const agent = await startAgent(clientId, holder.clientPort, `${cred}:${cred}-password`);
    await eventually(
      `${via.id} listing ${clientId}`,
      () => clientStates(via),
      (states) => states[clientId] === 'connected',
    );
    const removed = await via.api.request('DELETE', `/clients-auth/${cred}?force=true`, { auth: ADMIN });
    expect(removed.status, removed.text).toBe(204);
    await eventually(
      `${clientId} disconnected`,
      () => clientStates(holder),
      (states) => states[clientId] === 'disconnected',
    );
    await agent.stop();
  }
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
  const vaultState = async (via: Node) =>
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
      async () => (await coordinator.api.get(`/commands/${jid}`, { auth: ADMIN })).json.data as Run,
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

    const run = await finishedRun(coordinator.api, jid);
    expect(run.status, JSON.stringify(run)).toBe('successful');
    expect(run.jobs.map((j) => j.result.stdout)).toEqual(AGENT_IDS.map(() => `survived-${node.id}\n`));

    nodes[i] = await startNode(node);
  }
  // The restarted cluster still reaches every client through every node.
  for (const [via, clientId] of await crossPairs()) {
    const res = await via.api.post(
      `/clients/${clientId}/commands`,
      { command: '/usr/bin/echo after' },
      { auth: ADMIN },
    );
    expect(res.status, res.text).toBe(200);
    expect(await finishedJob(via.api, clientId, res.json.data.jid as string)).toMatchObject({
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
