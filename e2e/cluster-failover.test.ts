/**
 * Failure handling of a cluster (issue 26): two svcd nodes on one PostgreSQL database (each through a TCP relay
 * the test can cut) and their own nats-server, real svc agents. A client taken over by another node, two agents
 * sharing an id, kill -9 of a node, NATS stopped and started again, a node losing its database.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WS_SUBPROTOCOL } from '@svc/protocol';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createApiClient, type ApiClient } from '../test-support/api-client.js';
import { createTestDatabase, POSTGRES_PORT, type TestDatabase } from '../test-support/databases.js';
import { writeAdminUserFile } from '../test-support/e2e-setup.js';
import { startTestNats, type TestNats } from '../test-support/nats.js';
import {
  SVCD_BIN,
  SVC_BIN,
  freePort,
  freePortBlock,
  parseLog,
  startProcess,
  type RunningProcess,
} from '../test-support/process.js';
import { startTcpBalancer, type TcpBalancer } from '../test-support/tcp-balancer.js';
import { startTcpRelay, type TcpRelay } from '../test-support/tcp-relay.js';

const ADMIN = { basic: ['admin', 'admin-secret-1'] as [string, string] };
const HEARTBEAT_MS = 1_000;
const TAKEOVER_LIMIT = 3;

interface Node {
  id: string;
  dir: string;
  configPath: string;
  svcd: RunningProcess;
  api: ApiClient;
  clientPort: number;
  /** The node's way to PostgreSQL. */
  database: TcpRelay;
}

let dir: string;
let db: TestDatabase;
let nats: TestNats;
let fingerprint: string;
const nodes = new Map<string, Node>();
const processes: RunningProcess[] = [];
const relays: TcpRelay[] = [];
const balancers: TcpBalancer[] = [];

async function startNode(id: string): Promise<Node> {
  const nodeDir = join(dir, id);
  await mkdir(nodeDir, { recursive: true });
  await writeAdminUserFile(nodeDir);
  const [apiPort, clientPort, tunnelPorts] = [await freePort(), await freePort(), await freePortBlock(2)];
  const database = await startTcpRelay(POSTGRES_PORT);
  relays.push(database);
  const { settings } = db;
  const config = [
    '[server]',
    `address = "127.0.0.1:${clientPort}"`,
    'data_dir = "data"',
    'key_seed = "cluster-failover-seed"',
    'auth_table = "clients_auth"',
    `used_ports = ["${tunnelPorts}-${tunnelPorts + 1}"]`,
    '[api]',
    `address = "127.0.0.1:${apiPort}"`,
    'auth_file = "users.json"',
    '[database]',
    `db_type = "${settings.db_type}"`,
    `db_name = "${settings.db_name}"`,
    `db_host = "127.0.0.1:${database.port}"`,
    `db_user = "${settings.db_user}"`,
    '[cluster]',
    'enabled = true',
    `node_id = "${id}"`,
    `nats_url = "${nats.url}"`,
    `heartbeat_interval = "${HEARTBEAT_MS}ms"`,
    `takeover_limit = ${TAKEOVER_LIMIT}`,
  ];
  const configPath = join(nodeDir, 'svcd.conf');
  await writeFile(configPath, config.join('\n'));
  const svcd = await startSvcd(configPath, nodeDir);
  fingerprint = String((await svcd.waitForLog('client listener started')).fingerprint);
  const node: Node = {
    id,
    dir: nodeDir,
    configPath,
    svcd,
    api: createApiClient(`http://127.0.0.1:${apiPort}/api/v1`),
    clientPort,
    database,
  };
  nodes.set(id, node);
  return node;
}

/** The same node (ports, data) started again after it was killed. */
async function restartNode(node: Node): Promise<void> {
  node.svcd = await startSvcd(node.configPath, node.dir);
}

/** svcd started and listening; when it does not come up, the error carries its log. */
async function startSvcd(configPath: string, cwd: string): Promise<RunningProcess> {
  const svcd = startProcess(SVCD_BIN, ['-c', configPath], { cwd });
  processes.push(svcd);
  try {
    await svcd.waitForLog('API listening', 60_000);
  } catch (err) {
    throw new Error(
      `svcd did not start: ${(err as Error).message}\n${svcd.stdoutLines.slice(-20).join('\n')}`,
    );
  }
  return svcd;
}

const node = (id: string): Node => {
  const found = nodes.get(id);
  if (!found) throw new Error(`no node ${id}`);
  return found;
};

/** An agent connecting to `port` (a node, or a relay in front of several); `name` keeps its files apart. */
async function startAgent(clientId: string, port: number, name = clientId): Promise<RunningProcess> {
  const conf = join(dir, `${name}.conf`);
  await writeFile(
    conf,
    [
      '[client]',
      `server = "http://127.0.0.1:${port}"`,
      'auth = "agent:agent-password-1"',
      `id = "${clientId}"`,
      `fingerprint = "${fingerprint}"`,
      `data_dir = "${join(dir, `${name}-data`)}"`,
      '[connection]',
      'max_retry_interval = "2s"',
    ].join('\n'),
  );
  const agent = startProcess(SVC_BIN, ['-c', conf], { env: { SVC_AUTH: undefined } });
  processes.push(agent);
  await agent.waitForLog('connected to svcd', 60_000);
  return agent;
}

/** Polls (bounded) until `check` passes: the API offers no event for another node's change. */
async function eventually<T>(
  what: string,
  read: () => Promise<T>,
  check: (value: T) => boolean,
  withinMs = 30_000,
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

/** Reads for `forMs` and fails as soon as `check` does not hold: a state that must last, not one to wait for. */
async function holds<T>(what: string, read: () => Promise<T>, check: (value: T) => boolean, forMs: number) {
  const until = Date.now() + forMs;
  while (Date.now() < until) {
    const value = await read();
    if (!check(value)) throw new Error(`${what} did not hold: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function clientStates(via: Node): Promise<Record<string, string>> {
  const res = await via.api.get('/clients?fields[clients]=id,connection_state', { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  const data = res.json.data as { id: string; connection_state: string }[];
  return Object.fromEntries(data.map((c) => [c.id, c.connection_state]));
}

const connectedOnBoth = (...ids: string[]) =>
  Promise.all(
    [node('node-a'), node('node-b')].map((via) =>
      eventually(
        `${ids.join(', ')} connected on ${via.id}`,
        () => clientStates(via),
        (states) => ids.every((id) => states[id] === 'connected'),
      ),
    ),
  );

async function runCommand(via: Node, clientId: string, command: string): Promise<string> {
  const res = await via.api.post(`/clients/${clientId}/commands`, { command }, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data.jid as string;
}

interface JobView {
  status: string;
  error: string;
  started_at: string | null;
  result: { stdout: string };
}

async function jobOf(via: Node, clientId: string, jid: string): Promise<JobView> {
  const res = await via.api.get(`/clients/${clientId}/commands/${jid}`, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data as JobView;
}

const finished = (via: Node, clientId: string, jid: string) =>
  eventually(
    `job ${jid}`,
    () => jobOf(via, clientId, jid),
    (job) => job.status !== 'running',
  );

async function echoes(via: Node, clientId: string, text: string): Promise<void> {
  const jid = await runCommand(via, clientId, `/usr/bin/echo ${text}`);
  expect(await finished(via, clientId, jid)).toMatchObject({
    status: 'successful',
    result: { stdout: `${text}\n` },
  });
}

/** How many log lines of `msg` about `clientId` the process wrote. */
const logCount = (proc: RunningProcess, msg: string, clientId: string): number =>
  proc.stdoutLines.filter((line) => {
    const log = parseLog(line);
    return log?.msg === msg && log.client_id === clientId;
  }).length;

/** What a node's agent listener answers a new agent: 101 when it takes it, else the status and error code. */
function agentUpgrade(port: number): Promise<{ status: number; code?: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path: '/',
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        'sec-websocket-protocol': WS_SUBPROTOCOL,
      },
    });
    req.once('upgrade', (_res, socket) => {
      socket.destroy();
      resolve({ status: 101 });
    });
    req.once('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        const errors = (JSON.parse(body || '{}') as { errors?: { code: string }[] }).errors;
        resolve({ status: res.statusCode ?? 0, code: errors?.[0]?.code });
      });
    });
    req.once('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-cluster-failover-'));
  [db, nats] = await Promise.all([createTestDatabase('postgres'), startTestNats()]);
  // One after the other: the first creates the schema.
  await startNode('node-a');
  await startNode('node-b');
  const res = await node('node-a').api.post(
    '/clients-auth',
    { id: 'agent', password: 'agent-password-1' },
    { auth: ADMIN },
  );
  expect(res.status, res.text).toBe(201);
});

afterAll(async () => {
  if (process.env.KEEP_LOGS)
    for (const n of nodes.values())
      await writeFile(join(process.env.KEEP_LOGS, `${n.id}.log`), n.svcd.stdoutLines.join('\n'));
  for (const proc of processes.reverse()) await proc.stop();
  for (const balancer of balancers) await balancer.close();
  for (const relay of relays) await relay.cut();
  await nats?.stop();
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
});

test('take-over: the newest connection wins, the old node closes its copy and never marks the client disconnected', async () => {
  const a = node('node-a');
  const b = node('node-b');
  const first = await startAgent('mover', a.clientPort, 'mover-1');
  await connectedOnBoth('mover');
  // The first session still lives on node-a (its process is frozen, its socket open) when the agent comes
  // back through node-b.
  first.child.kill('SIGSTOP');
  const second = await startAgent('mover', b.clientPort, 'mover-2');
  await b.svcd.waitForLog('took over a client from another node (its newest connection wins)');
  await a.svcd.waitForLog('closing a connection another node has taken over (the newest connection wins)');
  // node-a reaches the client through node-b now.
  await echoes(a, 'mover', 'moved-to-b');
  // node-a's late close and its refreshes leave the client connected (held by node-b).
  await holds(
    'mover connected on node-a',
    () => clientStates(a),
    (states) => states.mover === 'connected',
    4 * HEARTBEAT_MS,
  );
  expect((await clientStates(b)).mover).toBe('connected');
  await first.stop();
  await second.stop();
  await eventually(
    'mover disconnected on node-a',
    () => clientStates(a),
    (states) => states.mover === 'disconnected',
  );
}, 120_000);

test(`two agents sharing an id: after ${TAKEOVER_LIMIT} take-overs in a minute the newcomer is refused, no endless flapping`, async () => {
  const a = node('node-a');
  const b = node('node-b');
  const one = await startAgent('twin', a.clientPort, 'twin-1');
  await connectedOnBoth('twin');
  const two = startAgent('twin', b.clientPort, 'twin-2');
  const refused =
    'agent refused: its client id moved between nodes too often within a minute (two agents sharing one id?)';
  await Promise.race([a.svcd.waitForLog(refused, 30_000), b.svcd.waitForLog(refused, 30_000)]);
  await two;
  const moves = () =>
    [a, b].reduce(
      (sum, n) =>
        sum + logCount(n.svcd, 'took over a client from another node (its newest connection wins)', 'twin'),
      0,
    );
  const settled = moves();
  // The refused agent keeps retrying (every ≤ 2 s) and stays refused: the id stops moving.
  await holds(
    'twin staying put',
    async () => ({ moves: moves(), states: await clientStates(a) }),
    (now) => now.moves === settled && now.states.twin === 'connected',
    5_000,
  );
  await one.stop();
  await (await two).stop();
}, 120_000);

test('kill -9 of a node: its agents reconnect to the other within 30 s, its running jobs end unknown naming it', async () => {
  const a = node('node-a');
  const b = node('node-b');
  // A load balancer in front of both nodes, node-b first: the agent lands on node-b and, once it is gone, on a.
  const balancer = await startTcpBalancer(() => [b.clientPort, a.clientPort]);
  balancers.push(balancer);
  const survivor = await startAgent('survivor', balancer.port);
  const doomed = await startAgent('doomed', b.clientPort);
  await connectedOnBoth('survivor', 'doomed');
  const jid = await runCommand(a, 'doomed', '/usr/bin/sleep 60');
  await eventually(
    'the job started',
    () => jobOf(a, 'doomed', jid),
    (job) => job.started_at !== null,
  );

  // A run node-b coordinates, one client after the other: it waits on the first when node-b dies.
  const started = await b.api.post(
    '/commands',
    { command: '/usr/bin/sleep 60', client_ids: ['doomed', 'survivor'] },
    { auth: ADMIN },
  );
  expect(started.status, started.text).toBe(200);
  const runJid = started.json.data.jid as string;
  await eventually(
    'the run reaching its first client',
    async () => (await a.api.get(`/commands/${runJid}`, { auth: ADMIN })).json.data.jobs as unknown[],
    (jobs) => jobs.length === 1,
  );

  const killedAt = Date.now();
  b.svcd.child.kill('SIGKILL');
  // The agent of that job goes down with it: no result can come.
  doomed.child.kill('SIGKILL');
  await b.svcd.exited;
  await eventually(
    'the survivor connected again',
    () =>
      Promise.resolve(
        survivor.stdoutLines.filter((line) => parseLog(line)?.msg === 'connected to svcd').length,
      ),
    (connects) => connects >= 2,
    30_000,
  );
  await eventually(
    'survivor connected on node-a',
    () => clientStates(a),
    (states) => states.survivor === 'connected',
    30_000,
  );
  expect(Date.now() - killedAt).toBeLessThan(30_000);
  await echoes(a, 'survivor', 'after-failover');

  const lost = await eventually(
    `job ${jid} ended`,
    () => jobOf(a, 'doomed', jid),
    (job) => job.status !== 'running',
    3 * HEARTBEAT_MS + 30_000,
  );
  expect(lost.status).toBe('unknown');
  expect(lost.error).toContain("node 'node-b'");
  expect((await clientStates(a)).doomed).toBe('disconnected');

  // node-a ends the run node-b coordinated: the client it had not reached gets a failed child naming node-b.
  const run = await eventually(
    `run ${runJid} ended`,
    async () =>
      (await a.api.get(`/commands/${runJid}`, { auth: ADMIN })).json.data as {
        status: string;
        jobs: { client_id: string; status: string; error: string }[];
      },
    (data) => data.status !== 'running',
  );
  expect(run.jobs.map((job) => [job.client_id, job.status])).toEqual([
    ['doomed', 'unknown'],
    ['survivor', 'failed'],
  ]);
  expect(run.jobs[1]?.error).toContain("node 'node-b', which coordinated this run");

  // node-b comes back while node-a holds the agent: it lists it connected and node-a keeps it.
  await restartNode(b);
  expect((await clientStates(b)).survivor).toBe('connected');
  await holds(
    'survivor connected on both nodes',
    async () => [(await clientStates(a)).survivor, (await clientStates(b)).survivor],
    (states) => states.every((state) => state === 'connected'),
    3 * HEARTBEAT_MS,
  );
  await echoes(b, 'survivor', 'via-restarted-b');
}, 180_000);

test('NATS down: each node serves its own agents, others answer 503 naming NATS; all recovers when NATS returns', async () => {
  const a = node('node-a');
  const b = node('node-b');
  await startAgent('on-b', b.clientPort);
  await connectedOnBoth('on-b', 'survivor');

  await nats.halt();
  await a.svcd.waitForLog('lost NATS: serving only the clients this node holds until it is back');
  const refused = await a.api.post(
    '/clients/on-b/commands',
    { command: '/usr/bin/echo no' },
    { auth: ADMIN },
  );
  expect(refused.status, refused.text).toBe(503);
  expect(refused.json.errors[0].code).toBe('ERR_CLUSTER_BUS_UNAVAILABLE');
  expect(refused.json.errors[0].title).toContain('NATS');
  // Its own agent still runs commands, and so do node-b's through node-b.
  await echoes(a, 'survivor', 'own-agent-on-a');
  await echoes(b, 'on-b', 'own-agent-on-b');
  // Long enough for every presence key to expire (three heartbeats).
  await eventually(
    'node-b seen long ago by node-a',
    async () =>
      (await a.api.get('/status', { auth: ADMIN })).json.data.cluster.nodes as {
        node_id: string;
        seen_at: string;
      }[],
    (seen) =>
      seen.some((n) => n.node_id === 'node-b' && Date.now() - Date.parse(n.seen_at) > 3.5 * HEARTBEAT_MS),
  );

  await nats.restart();
  await a.svcd.waitForLog('NATS is back: the cluster routes and presence resume', 30_000);
  await eventually(
    'a command through node-a reaching node-b again',
    async () =>
      (await a.api.post('/clients/on-b/commands', { command: '/usr/bin/echo back' }, { auth: ADMIN })).status,
    (status) => status === 200,
    30_000,
  );
  await echoes(a, 'on-b', 'routed-again');
  await echoes(b, 'survivor', 'routed-again-too');
  // Nothing was marked disconnected on the way back.
  await holds(
    'both clients connected on both nodes',
    async () => [await clientStates(a), await clientStates(b)],
    (all) => all.every((states) => states['on-b'] === 'connected' && states.survivor === 'connected'),
    4 * HEARTBEAT_MS,
  );
}, 180_000);

test('a node that loses its database refuses new agents with 503 and takes them again once it is back', async () => {
  const a = node('node-a');
  const b = node('node-b');
  await b.database.cut();
  expect(
    await eventually(
      'node-b refusing agents',
      () => agentUpgrade(b.clientPort),
      (answer) => answer.status === 503,
    ),
  ).toEqual({ status: 503, code: 'ERR_DATABASE_UNAVAILABLE' });
  // node-a, whose database is there, takes agents.
  expect(await agentUpgrade(a.clientPort)).toEqual({ status: 101 });
  await b.database.restore();
  await eventually(
    'node-b taking agents again',
    () => agentUpgrade(b.clientPort),
    (answer) => answer.status === 101,
  );
  await startAgent('after-db', b.clientPort);
  await connectedOnBoth('after-db');
}, 120_000);
