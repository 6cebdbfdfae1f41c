/**
 * A cluster of real svcd nodes for end-to-end tests (issue 26): a PostgreSQL database and a nats-server of its
 * own, svcd processes with `[cluster]` on free ports (new ports when another test takes one first), real agents
 * on a chosen node or behind whatever the test puts in front of the nodes, and nodes killed, stopped and started
 * again. `close()` removes all of it.
 *
 *   const cluster = await TestCluster.start({ name: 'cluster', heartbeatMs: 1_000 });
 *   const [a, b] = await cluster.startNodes('node-a', 'node-b');
 *   await cluster.createCredential();
 *   await cluster.startAgent('agent-b', b);
 *   const inProcess = await connectLinkAgent(cluster.link(a), 'agent-a'); // link-agent.ts
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../packages/server/src/storage/database.js';
import { openVaultStorage } from '../packages/server/src/storage/open-vault-storage.js';
import { TableClientAuthStore } from '../packages/server/src/storage/table-client-auth-store.js';
import type { AgentLinkOptions } from './agent-client.js';
import type { ApiClient } from './api-client.js';
import { ADMIN, clientStates, eventually } from './cluster-api.js';
import { createTestDatabase, POSTGRES_PORT, type TestDatabase } from './databases.js';
import { QUICK_RECONNECT, startE2eAgent } from './e2e-agent.js';
import { startE2eSvcdOnFreePorts, startSvcdProcess } from './e2e-setup.js';
import { startTestNats, type TestNats } from './nats.js';
import { freePortBlock, type RunningProcess } from './process.js';
import { startTcpRelay, type TcpRelay } from './tcp-relay.js';

/** A node (re)start or an agent's connect shares two cores with the other nodes, agents and test files. */
const START_TIMEOUT_MS = 60_000;
/** `[server] auth_table`: client credentials in the shared database. */
const CLIENT_AUTH_TABLE = 'clients_auth';
/** The client credential `createCredential()` adds and agents log in with unless told otherwise. */
const AGENT_CREDENTIAL = { id: 'agent', password: 'agent-password-1' };

/**
 * What the first node would create at its start (the migrations, the vault's tables, the credential table),
 * created here with svcd's own code, so that every node can start side by side.
 */
async function createSchema(db: TestDatabase): Promise<void> {
  const database = await openDatabase(db.settings, { dataDir: db.dataDir });
  try {
    await (await openVaultStorage(database, db.settings, db.dataDir)).close();
    await TableClientAuthStore.open(database, CLIENT_AUTH_TABLE);
  } finally {
    await database.close();
  }
}

export interface ClusterOptions {
  /** Names the temporary folder and the nodes' key seed. */
  name: string;
  /** `[cluster] heartbeat_interval`: a node silent for three of them is gone. */
  heartbeatMs: number;
  /** How many ports each node's own tunnel pool has (`[server] used_ports`); default 2. */
  tunnelPorts?: number;
  /** Each node reaches PostgreSQL through a TCP relay of its own, which the test can cut. */
  databaseRelays?: boolean;
  /** More `[api]` lines of every node. */
  api?: string[];
  /** More `[cluster]` lines of a node. */
  cluster?: (nodeId: string) => string[];
}

export interface ClusterNode {
  readonly id: string;
  readonly dir: string;
  readonly configPath: string;
  readonly apiPort: number;
  /** The agent listener's port. */
  readonly clientPort: number;
  /** First port of the node's tunnel pool. */
  readonly tunnelPorts: number;
  readonly api: ApiClient;
  /** The node's way to PostgreSQL (`databaseRelays`). */
  readonly database: TcpRelay | undefined;
  /** The running svcd; `restart` replaces it. */
  svcd: RunningProcess;
}

export interface AgentOptions {
  /** Names its folder (config, data); default the client id. Two agents sharing an id need two names. */
  name?: string;
  /** `id:password` of a client credential; default the one `createCredential()` adds. */
  auth?: string;
}

const running = (proc: RunningProcess): boolean =>
  proc.child.exitCode === null && proc.child.signalCode === null;

export class TestCluster {
  /** Every node started, in the order they were, also those stopped since. */
  readonly nodes = new Map<string, ClusterNode>();
  /** The host key fingerprint agents pin (one key seed: the same on every node). */
  fingerprint = '';
  private readonly processes: RunningProcess[] = [];
  private readonly closers: (() => Promise<unknown>)[] = [];

  private constructor(
    readonly dir: string,
    readonly db: TestDatabase,
    readonly nats: TestNats,
    private readonly options: ClusterOptions,
  ) {}

  /**
   * The database with its schema and the nats-server; no node yet. Throws (never skips) when PostgreSQL or NATS
   * is missing.
   */
  static async start(options: ClusterOptions): Promise<TestCluster> {
    const dir = await mkdtemp(join(tmpdir(), `svc-${options.name}-`));
    const withSchema = async () => {
      const db = await createTestDatabase('postgres');
      await createSchema(db).catch(async (err: unknown) => {
        await db.drop();
        throw err;
      });
      return db;
    };
    const [db, nats] = await Promise.allSettled([withSchema(), startTestNats()]);
    if (db.status === 'fulfilled' && nats.status === 'fulfilled')
      return new TestCluster(dir, db.value, nats.value, options);
    if (db.status === 'fulfilled') await db.value.drop();
    if (nats.status === 'fulfilled') await nats.value.stop();
    await rm(dir, { recursive: true, force: true });
    throw db.status === 'rejected' ? db.reason : (nats as PromiseRejectedResult).reason;
  }

  /** Starts nodes side by side (the schema is there already). */
  startNodes(...ids: string[]): Promise<ClusterNode[]> {
    return Promise.all(ids.map((id) => this.startNode(id)));
  }

  /** One svcd node with `[cluster]` on free ports, listening once this resolves. */
  async startNode(id: string): Promise<ClusterNode> {
    const dir = join(this.dir, id);
    await mkdir(dir, { recursive: true });
    const poolSize = this.options.tunnelPorts ?? 2;
    const tunnelPorts = await freePortBlock(poolSize);
    const database = this.options.databaseRelays ? await startTcpRelay(POSTGRES_PORT) : undefined;
    if (database) this.closers.push(() => database.cut());
    const { settings } = this.db;
    const started = await startE2eSvcdOnFreePorts(
      dir,
      {
        keySeed: `${this.options.name}-seed`,
        server: [
          // In the shared database: a credential added or removed through one node is so on all.
          `auth_table = "${CLIENT_AUTH_TABLE}"`,
          `used_ports = ["${tunnelPorts}-${tunnelPorts + poolSize - 1}"]`,
        ],
        api: this.options.api ?? [],
        sections: [
          '[database]',
          `db_type = "${settings.db_type}"`,
          `db_name = "${settings.db_name}"`,
          `db_host = "${database ? `127.0.0.1:${database.port}` : settings.db_host}"`,
          `db_user = "${settings.db_user}"`,
          '[cluster]',
          'enabled = true',
          `node_id = "${id}"`,
          `nats_url = "${this.nats.url}"`,
          `heartbeat_interval = "${this.options.heartbeatMs}ms"`,
          ...(this.options.cluster?.(id) ?? []),
        ],
        startTimeoutMs: START_TIMEOUT_MS,
      },
      { cwd: dir },
    );
    this.processes.push(started.svcd);
    this.fingerprint = started.fingerprint;
    const node: ClusterNode = {
      id,
      dir,
      configPath: started.configPath,
      apiPort: started.apiPort,
      clientPort: started.clientPort,
      tunnelPorts,
      api: started.api,
      database,
      svcd: started.svcd,
    };
    this.nodes.set(id, node);
    return node;
  }

  node(id: string): ClusterNode {
    const found = this.nodes.get(id);
    if (!found) throw new Error(`no node ${id}`);
    return found;
  }

  /** The nodes whose svcd runs now. */
  live(): ClusterNode[] {
    return [...this.nodes.values()].filter((node) => running(node.svcd));
  }

  /** The same node (ports, data, config) started again after it stopped; resolves once it takes agents. */
  async restart(node: ClusterNode): Promise<ClusterNode> {
    if (running(node.svcd)) throw new Error(`${node.id} is still running`);
    node.svcd = await startSvcdProcess(node.configPath, { cwd: node.dir }, START_TIMEOUT_MS);
    this.processes.push(node.svcd);
    await node.svcd.waitForLog('client listener started');
    return node;
  }

  /** kill -9: the node is gone at once, its presence left to expire. */
  async kill(node: ClusterNode): Promise<void> {
    node.svcd.child.kill('SIGKILL');
    await node.svcd.exited;
  }

  /** SIGTERM: a cluster node drains (its agents move to the others), then exits; resolves with how it exited. */
  stop(node: ClusterNode): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    node.svcd.child.kill('SIGTERM');
    return node.svcd.exited;
  }

  /** Adds a client credential (in the shared database) through the first node; the agents' default one. */
  async createCredential(id = AGENT_CREDENTIAL.id, password = AGENT_CREDENTIAL.password): Promise<void> {
    const [first] = this.live();
    if (!first) throw new Error('no node runs');
    const res = await first.api.post('/clients-auth', { id, password }, { auth: ADMIN });
    if (res.status !== 201) throw new Error(`adding client credential ${id}: ${res.status} ${res.text}`);
  }

  /**
   * A real agent connecting to a node, or to a port in front of nodes (a balancer, haproxy); resolves once it is
   * connected. It reconnects within 2 s of losing its node.
   */
  async startAgent(
    clientId: string,
    via: ClusterNode | number,
    options: AgentOptions = {},
  ): Promise<RunningProcess> {
    const dir = join(this.dir, 'agents', options.name ?? clientId);
    await mkdir(dir, { recursive: true });
    const agent = await startE2eAgent({
      dir,
      server: `http://127.0.0.1:${typeof via === 'number' ? via : via.clientPort}`,
      fingerprint: this.fingerprint,
      id: clientId,
      auth: options.auth ?? `${AGENT_CREDENTIAL.id}:${AGENT_CREDENTIAL.password}`,
      lines: QUICK_RECONNECT,
      timeoutMs: START_TIMEOUT_MS,
    });
    this.processes.push(agent);
    return agent;
  }

  /** How an in-process agent (agent-client.ts, link-agent.ts) logs in to a node with the default credential. */
  link(node: ClusterNode): AgentLinkOptions {
    return {
      url: `ws://127.0.0.1:${node.clientPort}`,
      authId: AGENT_CREDENTIAL.id,
      password: AGENT_CREDENTIAL.password,
      fingerprint: this.fingerprint,
    };
  }

  /** Waits until every running node (or those given) lists the clients connected: presence reached them. */
  async connected(clientIds: string[], via: ClusterNode[] = this.live()): Promise<void> {
    await Promise.all(
      via.map((node) =>
        eventually(
          `${clientIds.join(', ')} connected on ${node.id}`,
          () => clientStates(node.api),
          (states) => clientIds.every((id) => states[id] === 'connected'),
        ),
      ),
    );
  }

  /** A process or helper of the test (haproxy, a balancer) to end with the cluster. */
  onClose(close: () => Promise<unknown>): void {
    this.closers.push(close);
  }

  /** Stops every process, then removes the database, the nats-server and the files. KEEP_LOGS=dir keeps logs. */
  async close(): Promise<void> {
    const keep = process.env.KEEP_LOGS;
    if (keep)
      for (const node of this.nodes.values())
        await writeFile(join(keep, `${node.id}.log`), node.svcd.stdoutLines.join('\n'));
    await Promise.all(this.processes.map((proc) => proc.stop()));
    for (const close of this.closers.reverse()) await close();
    await this.nats.stop();
    await this.db.drop();
    await rm(this.dir, { recursive: true, force: true });
  }
}
