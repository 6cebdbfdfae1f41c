/**
 * Two svcd nodes as one cluster (issue 26): one PostgreSQL database and one NATS (its own nats-server), real svc
 * agents on different nodes. Commands cross nodes over NATS, both nodes list every client, and a node killed
 * with -9 answers "not connected" at once and loses its clients after the presence TTL.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createApiClient, type ApiClient } from '../test-support/api-client.js';
import { createTestDatabase, type TestDatabase } from '../test-support/databases.js';
import { startSvcdProcess, writeAdminUserFile } from '../test-support/e2e-setup.js';
import { startTestNats, type TestNats } from '../test-support/nats.js';
import {
  SVC_BIN,
  freePort,
  freePortBlock,
  startProcess,
  type RunningProcess,
} from '../test-support/process.js';

const ADMIN = { basic: ['admin', 'admin-secret-1'] as [string, string] };
const HEARTBEAT_MS = 1_000;

interface Node {
  id: string;
  svcd: RunningProcess;
  api: ApiClient;
  clientUrl: string;
}

let dir: string;
let db: TestDatabase;
let nats: TestNats;
let fingerprint: string;
let echo: Server;
let echoPort: number;
const nodes = new Map<string, Node>();
const processes: RunningProcess[] = [];

async function startNode(id: string): Promise<Node> {
  const nodeDir = join(dir, id);
  await mkdir(nodeDir, { recursive: true });
  await writeAdminUserFile(nodeDir);
  const [apiPort, clientPort, tunnelPorts] = [await freePort(), await freePort(), await freePortBlock(2)];
  const { settings } = db;
  const config = [
    '[server]',
    `address = "127.0.0.1:${clientPort}"`,
    'data_dir = "data"',
    'key_seed = "cluster-e2e-seed"',
    // In the shared database: a credential removed through one node is gone for all.
    'auth_table = "clients_auth"',
    `used_ports = ["${tunnelPorts}-${tunnelPorts + 1}"]`,
    '[api]',
    `address = "127.0.0.1:${apiPort}"`,
    'auth_file = "users.json"',
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
    // Not the API's host (127.0.0.1): tunnel_url shows it names the advertised address of the node listening.
    'advertise_address = "localhost"',
  ];
  const configPath = join(nodeDir, 'svcd.conf');
  await writeFile(configPath, config.join('\n'));
  const svcd = await startSvcdProcess(configPath, { cwd: nodeDir });
  processes.push(svcd);
  fingerprint = String((await svcd.waitForLog('client listener started')).fingerprint);
  const node = {
    id,
    svcd,
    api: createApiClient(`http://127.0.0.1:${apiPort}/api/v1`),
    clientUrl: `http://127.0.0.1:${clientPort}`,
  };
  nodes.set(id, node);
  return node;
}

async function startAgent(
  clientId: string,
  node: Node,
  auth = 'agent:agent-password-1',
): Promise<RunningProcess> {
  const conf = join(dir, `${clientId}.conf`);
  await writeFile(
    conf,
    [
      '[client]',
      `server = "${node.clientUrl}"`,
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

const node = (id: string): Node => {
  const found = nodes.get(id);
  if (!found) throw new Error(`no node ${id}`);
  return found;
};

/** Polls (bounded) until `check` passes: the API offers no event for another node's change. */
async function eventually<T>(
  what: string,
  read: () => Promise<T>,
  check: (value: T) => boolean,
  withinMs = 15_000,
) {
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

async function runCommand(via: Node, clientId: string, command: string): Promise<string> {
  const res = await via.api.post(`/clients/${clientId}/commands`, { command }, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data.jid as string;
}

async function jobOf(via: Node, clientId: string, jid: string) {
  const res = await via.api.get(`/clients/${clientId}/commands/${jid}`, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data as { status: string; error: string; result: { stdout: string } };
}

const finished = (via: Node, clientId: string, jid: string) =>
  eventually(
    `job ${jid}`,
    () => jobOf(via, clientId, jid),
    (job) => job.status !== 'running',
  );

/** Sends `text` through a tunnel's port to the echo server behind the agent, and reads it back. */
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

beforeAll(async () => {
  echo = createServer((socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  echoPort = (echo.address() as { port: number }).port;
  dir = await mkdtemp(join(tmpdir(), 'svc-cluster-'));
  [db, nats] = await Promise.all([createTestDatabase('postgres'), startTestNats()]);
  // One after the other: the first creates the schema.
  await startNode('node-a');
  await startNode('node-b');
  for (const [id, password] of [
    ['agent', 'agent-password-1'],
    ['cred-c', 'cred-c-password-1'],
  ]) {
    const res = await node('node-a').api.post('/clients-auth', { id, password }, { auth: ADMIN });
    expect(res.status, res.text).toBe(201);
  }
  await startAgent('agent-a', node('node-a'));
  await startAgent('agent-b', node('node-b'));
});

afterAll(async () => {
  for (const proc of processes.reverse()) await proc.stop();
  echo?.close();
  await nats?.stop();
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
});

test('every node lists the clients of every node as connected', async () => {
  for (const via of [node('node-a'), node('node-b')]) {
    await eventually(
      `${via.id} listing both clients`,
      () => clientStates(via),
      (states) => states['agent-a'] === 'connected' && states['agent-b'] === 'connected',
    );
  }
});

test('a node started while the others hold agents marks none of them disconnected', async () => {
  const c = await startNode('node-c');
  // Its start-up read the table at once: what it lists now is what it loaded, not a later refresh.
  const seenByC = await clientStates(c);
  expect(seenByC).toMatchObject({ 'agent-a': 'connected', 'agent-b': 'connected' });
  expect(await clientStates(node('node-a'))).toMatchObject({
    'agent-a': 'connected',
    'agent-b': 'connected',
  });
  const cmd = await runCommand(c, 'agent-b', '/usr/bin/echo via-c');
  expect(await finished(c, 'agent-b', cmd)).toMatchObject({
    status: 'successful',
    result: { stdout: 'via-c\n' },
  });
  c.svcd.child.kill('SIGTERM');
  await c.svcd.exited;
  nodes.delete('node-c');
});

test('/status of any node lists the nodes of the cluster with their state', async () => {
  for (const via of [node('node-a'), node('node-b')]) {
    const res = await via.api.get('/status', { auth: ADMIN });
    expect(res.status, res.text).toBe(200);
    const { cluster, clients_connected } = res.json.data as {
      cluster: { node_id: string; nodes: { node_id: string; state: string; advertise_address: string }[] };
      clients_connected: number;
    };
    expect(clients_connected).toBe(2);
    expect(cluster.node_id).toBe(via.id);
    expect(cluster.nodes.map((n) => [n.node_id, n.state, n.advertise_address])).toEqual([
      ['node-a', 'live', 'localhost'],
      ['node-b', 'live', 'localhost'],
    ]);
  }
});

test('a command through one node runs on a client held by the other, its result stored once', async () => {
  const jidB = await runCommand(node('node-a'), 'agent-b', '/usr/bin/echo via-a-on-b');
  const jidA = await runCommand(node('node-b'), 'agent-a', '/usr/bin/echo via-b-on-a');
  const onB = await finished(node('node-a'), 'agent-b', jidB);
  expect(onB, onB.error).toMatchObject({ status: 'successful', result: { stdout: 'via-a-on-b\n' } });
  const onA = await finished(node('node-b'), 'agent-a', jidA);
  expect(onA).toMatchObject({ status: 'successful', result: { stdout: 'via-b-on-a\n' } });
  // The other node reads the same stored result.
  expect(await jobOf(node('node-b'), 'agent-b', jidB)).toMatchObject({ result: { stdout: 'via-a-on-b\n' } });
});

test('a multi-client run through one node over clients of both nodes finishes with every result', async () => {
  const res = await node('node-a').api.post(
    '/commands',
    { command: '/usr/bin/echo run-wide', client_ids: ['agent-a', 'agent-b'] },
    { auth: ADMIN },
  );
  expect(res.status, res.text).toBe(200);
  const jid = res.json.data.jid as string;
  // Sequential by default: the second child starts only once node-a learns the first one finished.
  const run = await eventually(
    `run ${jid}`,
    async () =>
      (await node('node-a').api.get(`/commands/${jid}`, { auth: ADMIN })).json.data as {
        status: string;
        jobs: { client_id: string; status: string }[];
      },
    (data) => data.status !== 'running',
  );
  expect(run.status).toBe('successful');
  expect(run.jobs.map((j) => [j.client_id, j.status])).toEqual([
    ['agent-a', 'successful'],
    ['agent-b', 'successful'],
  ]);
});

test('a tunnel opened through one node listens on the node holding the client; every node lists and deletes it', async () => {
  const opened = await node('node-a').api.request(
    'PUT',
    `/clients/agent-b/tunnels?${new URLSearchParams({ remote: `127.0.0.1:${echoPort}`, scheme: 'http' }).toString()}`,
    { auth: ADMIN },
  );
  expect(opened.status, opened.text).toBe(200);
  const tunnel = opened.json.data as { id: string; lport: string; tunnel_url: string };
  expect(tunnel.tunnel_url).toBe(`http://localhost:${tunnel.lport}`);
  expect(await roundTrip(Number(tunnel.lport), 'through node-b')).toBe('through node-b');
  const listed = await node('node-a').api.get('/tunnels', { auth: ADMIN });
  expect(listed.status, listed.text).toBe(200);
  expect(listed.json.data).toEqual([
    expect.objectContaining({ client_id: 'agent-b', id: tunnel.id, lport: tunnel.lport }),
  ]);
  const deleted = await node('node-a').api.request('DELETE', `/clients/agent-b/tunnels/${tunnel.id}`, {
    auth: ADMIN,
  });
  expect(deleted.status, deleted.text).toBe(204);
  expect((await node('node-b').api.get('/tunnels', { auth: ADMIN })).json.data).toEqual([]);
});

test('removing a client credential through one node disconnects its client on the other', async () => {
  const agentC = await startAgent('agent-c', node('node-b'), 'cred-c:cred-c-password-1');
  await eventually(
    'agent-c connected on node-a',
    () => clientStates(node('node-a')),
    (states) => states['agent-c'] === 'connected',
  );
  // node-a counts the connection node-b holds.
  const refused = await node('node-a').api.request('DELETE', '/clients-auth/cred-c', { auth: ADMIN });
  expect(refused.status, refused.text).toBe(409);
  const removed = await node('node-a').api.request('DELETE', '/clients-auth/cred-c?force=true', {
    auth: ADMIN,
  });
  expect(removed.status, removed.text).toBe(204);
  await eventually(
    'agent-c disconnected on node-a',
    () => clientStates(node('node-a')),
    (states) => states['agent-c'] === 'disconnected',
  );
  await agentC.stop();
});

test('kill -9 of a node: "not connected" at once, its clients disconnected after the TTL, reconnected elsewhere', async () => {
  const b = node('node-b');
  b.svcd.child.kill('SIGKILL');
  await b.svcd.exited;
  // Presence still names node-b (its keys live until the TTL), but nobody answers its subject.
  const started = Date.now();
  const jid = await runCommand(node('node-a'), 'agent-b', '/usr/bin/echo never');
  const failed = await jobOf(node('node-a'), 'agent-b', jid);
  expect(Date.now() - started).toBeLessThan(1_000);
  expect(failed.status).toBe('failed');
  expect(failed.error).toContain('not connected');

  await eventually(
    'agent-b disconnected on node-a',
    () => clientStates(node('node-a')),
    (states) => states['agent-b'] === 'disconnected' && states['agent-a'] === 'connected',
    HEARTBEAT_MS * 3 + 5_000,
  );
  const status = await node('node-a').api.get('/status', { auth: ADMIN });
  expect(status.json.data.cluster.nodes.map((n: { node_id: string }) => n.node_id)).toEqual(['node-a']);

  // The agent takes one server URL: it is started again pointing at node-a (a load balancer would do this).
  const agentB = processes.find((p) => p.stdoutLines.some((l) => l.includes('"client_id":"agent-b"')));
  await agentB?.stop();
  await startAgent('agent-b', node('node-a'));
  const jidAgain = await runCommand(node('node-a'), 'agent-b', '/usr/bin/echo back-on-a');
  expect(await finished(node('node-a'), 'agent-b', jidAgain)).toMatchObject({
    status: 'successful',
    result: { stdout: 'back-on-a\n' },
  });
}, 40_000);
