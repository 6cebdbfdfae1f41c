/**
 * What the cluster bench starts (issue 26): its own nats-server with JetStream, a fresh PostgreSQL database
 * (dropped at clean-up), N svcd nodes sharing both (built `dist`, one host key, one JWT secret), a logged-in API
 * client per node, and per node a simulator fleet whose agents go on to the other nodes once their link is lost.
 * Everything listens on 127.0.0.1 and is stopped at clean-up, even after a failure.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase } from '../../test-support/databases.js';
import { ApiClient, type StatusData } from './api-client.js';
import { onCleanUp } from './bench-runner.js';
import { freePort, HOST, startChild, STOP_TIMEOUT_MS, type Managed } from './child-processes.js';
import { progress } from './report.js';
import { SimulatorFleet } from './simulator-fleet.js';
import { checkBindable, sourcePortShortage } from './source-addresses.js';
import { API_USER, CLIENT_AUTH, SvcdProcess } from './svcd-process.js';

export interface ClusterOptions {
  nodes: number;
  /** Simulated agents per node (their sum is the whole fleet). */
  agentsPerNode: number[];
  workersPerNode: number;
  /** First connection attempts in flight at once, per node. */
  connectConcurrency: number;
  maxHandshakes: number;
  heartbeatMs: number;
  svcdNodeArgs: string[];
  /** Keep-alive sockets of each node's API client. */
  apiSockets: number;
  /** Serve each node's Prometheus metrics on a free loopback port (SvcdProcess `metrics`). */
  metrics?: boolean;
  /**
   * `[cluster] drain_timeout` of every node in seconds (default 0: the cluster bench stops its simulators before
   * the nodes, so nobody is left to move); a node stopped at clean-up gets that much longer before it is killed.
   */
  drainTimeoutS?: number;
  /** Source addresses the simulated agents connect from (SimulatorFleet `localAddresses`); default the system's. */
  localAddresses?: string[];
}

export interface BenchNode {
  /** `[cluster] node_id`: svcd-1, svcd-2, … */
  id: string;
  svcd: SvcdProcess;
  api: ApiClient;
  /** This node's agents (not started yet); their ids start with `agentPrefix`. */
  fleet: SimulatorFleet;
  /**
   * Another fleet of `count` agents for this node (not started yet; stopped at clean-up), with ids starting with
   * `idPrefix` and the other nodes as fallback URLs, as `fleet`; in `workers` processes (default workersPerNode).
   */
  newFleet: (count: number, idPrefix: string, workers?: number) => SimulatorFleet;
  agentPrefix: string;
  agents: number;
}

export interface Cluster {
  nodes: BenchNode[];
  natsUrl: string;
  database: string;
}

const NATS_START_MS = 10_000;
const KEY_SEED = 'cluster-bench-key-seed';
const JWT_SECRET = 'cluster-bench-jwt-secret-0123456789';

const reachable = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect(port, HOST);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/** nats-server -js on a free port with its store in `dir`; resolves once it listens (at most 10 s). */
async function startNats(dir: string): Promise<{ url: string; child: Managed }> {
  const port = await freePort();
  const child = startChild(
    'nats-server',
    'nats-server',
    ['-a', HOST, '-p', String(port), '-js', '-sd', dir],
    {
      cwd: dir,
    },
  );
  onCleanUp(() => child.stop());
  const deadline = Date.now() + NATS_START_MS;
  while (!(await reachable(port))) {
    if (!child.running)
      throw new Error(
        `nats-server stopped (${child.describeExit()}; apt-get install nats-server):\n${child.tail()}`,
      );
    if (Date.now() > deadline) throw new Error(`nats-server did not listen within ${NATS_START_MS} ms`);
    await sleep(50);
  }
  return { url: `nats://${HOST}:${port}`, child };
}

/** Starts NATS, the database and the nodes (the first alone: it creates the schema), and logs in on each. */
export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const workDir = await mkdtemp(join(tmpdir(), 'svc-cluster-bench-'));
  onCleanUp(() => rm(workDir, { recursive: true, force: true }));
  await mkdir(join(workDir, 'nats'));
  const nats = await startNats(join(workDir, 'nats'));
  const db = await createTestDatabase('postgres');
  // Registered before the nodes, so it runs after they are stopped.
  onCleanUp(() => db.drop());
  const { settings } = db;
  progress(`nats-server at ${nats.url}; PostgreSQL database ${settings.db_name}`);

  const processes: SvcdProcess[] = [];
  for (let i = 1; i <= options.nodes; i++) {
    const id = `svcd-${i}`;
    const nodeDir = join(workDir, id);
    await mkdir(nodeDir);
    const svcd = new SvcdProcess({
      workDir: nodeDir,
      name: id,
      maxHandshakes: options.maxHandshakes,
      nodeArgs: options.svcdNodeArgs,
      serverLines: [`key_seed = ${JSON.stringify(KEY_SEED)}`],
      apiLines: [`jwt_secret = ${JSON.stringify(JWT_SECRET)}`],
      sections: [
        '[database]',
        `db_type = ${JSON.stringify(settings.db_type)}`,
        `db_name = ${JSON.stringify(settings.db_name)}`,
        `db_host = ${JSON.stringify(settings.db_host)}`,
        `db_user = ${JSON.stringify(settings.db_user)}`,
        '[cluster]',
        'enabled = true',
        `node_id = ${JSON.stringify(id)}`,
        `nats_url = ${JSON.stringify(nats.url)}`,
        `heartbeat_interval = "${options.heartbeatMs}ms"`,
        `advertise_address = ${JSON.stringify(HOST)}`,
        `drain_timeout = "${options.drainTimeoutS ?? 0}s"`,
      ],
      metrics: options.metrics ?? false,
    });
    onCleanUp(() => svcd.stop((options.drainTimeoutS ?? 0) * 1000 + STOP_TIMEOUT_MS));
    await svcd.start();
    processes.push(svcd);
    progress(`${id} up: agents on ${svcd.agentUrl}, API on ${svcd.apiBase}`);
  }

  const nodes: BenchNode[] = [];
  let fingerprint: string | undefined;
  for (const [n, svcd] of processes.entries()) {
    const api = new ApiClient(svcd.apiBase, options.apiSockets);
    onCleanUp(() => api.close());
    // A full-size run (30,000 agents connecting) can take longer than the default hour.
    await api.login(API_USER.name, API_USER.password, 12 * 3600);
    const status = (await api.getJson<StatusData>('/status')).data;
    fingerprint ??= status.fingerprint;
    if (status.fingerprint !== fingerprint)
      throw new Error(`svcd-${n + 1} has the fingerprint ${status.fingerprint}, svcd-1 ${fingerprint}`);
    const agentPrefix = `a${n + 1}-`;
    const agents = options.agentsPerNode[n] ?? 0;
    const nodeFingerprint = fingerprint;
    const newFleet = (count: number, idPrefix: string, workers = options.workersPerNode) => {
      const fleet = new SimulatorFleet({
        url: svcd.agentUrl,
        fallbackUrls: processes.filter((other) => other !== svcd).map((other) => other.agentUrl),
        authId: CLIENT_AUTH.id,
        password: CLIENT_AUTH.password,
        fingerprint: nodeFingerprint,
        clients: count,
        workers,
        startConcurrency: options.connectConcurrency,
        idPrefix,
        ...(options.localAddresses ? { localAddresses: options.localAddresses } : {}),
      });
      onCleanUp(() => fleet.stop());
      return fleet;
    };
    const fleet = newFleet(agents, agentPrefix);
    nodes.push({ id: `svcd-${n + 1}`, svcd, api, fleet, newFleet, agentPrefix, agents });
  }
  return { nodes, natsUrl: nats.url, database: settings.db_name };
}

/** `total` agents over `nodes` nodes, the first ones taking the remainder. */
export function spread(total: number, nodes: number): number[] {
  return Array.from({ length: nodes }, (_, i) => Math.floor(total / nodes) + (i < total % nodes ? 1 : 0));
}

/**
 * Refuses, before anything starts, a plan the machine cannot carry: at least two nodes (the last one is stopped or
 * killed, `lastNode` says which), one agent per node, and source ports and bindable source addresses enough for
 * the agents, also once the last node's agents have moved to the others.
 */
export async function checkClusterPlan(
  nodes: number,
  agents: number,
  sourceAddresses: string[],
  lastNode: string,
): Promise<void> {
  if (nodes < 2) throw new Error(`BENCH_NODES must be at least 2 (${lastNode})`);
  if (agents < nodes) throw new Error(`BENCH_AGENTS must be at least BENCH_NODES (${nodes})`);
  const shortage = sourcePortShortage(sourceAddresses, agents, Math.ceil(agents / (nodes - 1)));
  if (shortage) throw new Error(shortage);
  await checkBindable(sourceAddresses);
}

/** What each node logged last (warnings and errors, as the benches run svcd): it helps to tell why a target failed. */
export function showNodeLogs(nodes: readonly BenchNode[]): void {
  for (const node of nodes)
    progress(`${node.id}'s last log lines:\n${node.svcd.child?.tail().slice(-1500) ?? ''}`);
}
