/**
 * A cluster for the end-to-end tests of multi-client runs across nodes (issue 26): real svcd processes sharing
 * one PostgreSQL database and a nats-server of the test's own, and agents in the test process that speak the real
 * link (WebSocket, SSH, control channel, job output channel) to one node and run each job as the test says.
 * Small pieces: the shared parts, a node, an agent on a node. Meant to give way to the shared
 * test-support/cluster-harness.ts once that exists.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeJobData, encodeJobEnd, encodeJobHeader } from '../packages/platform/src/job-frames.js';
import { JOB_OUTPUT_SUBSYSTEM, type JobRun } from '../packages/protocol/src/index.js';
import { connectClient, openSubsystem, type TestAgent } from './agent-client.js';
import { createApiClient, type ApiClient } from './api-client.js';
import { createTestDatabase, type TestDatabase } from './databases.js';
import { writeAdminUserFile } from './e2e-setup.js';
import { startTestNats, type TestNats } from './nats.js';
import { SVCD_BIN, freePort, startProcess, type LogLine, type RunningProcess } from './process.js';

const AGENT_ID = 'runs-agent';
const AGENT_PASSWORD = 'runs-agent-password-1';

/** What every node of one test cluster shares. */
export interface SharedParts {
  dir: string;
  db: TestDatabase;
  nats: TestNats;
  /** `[cluster] nats_prefix` of the nodes. */
  prefix: string;
  /** Stops NATS, drops the database and removes the folder (nodes and agents are stopped first by the test). */
  remove(): Promise<void>;
}

/** A fresh PostgreSQL database (fails loudly when PostgreSQL is down), a nats-server and a folder. */
export async function startSharedParts(prefix = 'svc'): Promise<SharedParts> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-e2e-cluster-runs-'));
  const db = await createTestDatabase('postgres');
  const nats = await startTestNats().catch(async (err: unknown) => {
    await db.drop();
    throw err;
  });
  return {
    dir,
    db,
    nats,
    prefix,
    async remove() {
      await nats.stop();
      await db.drop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface RunsNode {
  id: string;
  svcd: RunningProcess;
  api: ApiClient;
  apiPort: number;
  /** ws:// URL of its agent listener. */
  agentUrl: string;
  /** The host key fingerprint agents pin (one key_seed: the same on every node). */
  fingerprint: string;
}

/** Attempts at starting a node whose free ports another process took first (the machine is shared). */
const PORT_ATTEMPTS = 3;

/** Starts one svcd node of the cluster (the first one creates the schema: start them one after the other). */
export async function startRunsNode(shared: SharedParts, id: string, heartbeatMs: number): Promise<RunsNode> {
  const nodeDir = join(shared.dir, id);
  await mkdir(nodeDir, { recursive: true });
  await writeAdminUserFile(nodeDir);
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startOnFreePorts(shared, id, nodeDir, heartbeatMs);
    } catch (err) {
      if (attempt >= PORT_ATTEMPTS || !(err as Error).message.includes('address is already in use'))
        throw err;
    }
  }
}

async function startOnFreePorts(
  shared: SharedParts,
  id: string,
  nodeDir: string,
  heartbeatMs: number,
): Promise<RunsNode> {
  const apiPort = await freePort();
  const agentPort = await freePort();
  const { settings } = shared.db;
  const configPath = join(nodeDir, 'svcd.conf');
  await writeFile(
    configPath,
    [
      '[server]',
      `address = "127.0.0.1:${agentPort}"`,
      'data_dir = "data"',
      'key_seed = "cluster-runs-e2e"',
      `auth = "${AGENT_ID}:${AGENT_PASSWORD}"`,
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
      `nats_url = "${shared.nats.url}"`,
      `nats_prefix = "${shared.prefix}"`,
      `heartbeat_interval = "${heartbeatMs}ms"`,
    ].join('\n'),
  );
  const svcd = startProcess(SVCD_BIN, ['-c', configPath], { cwd: nodeDir });
  let listening: LogLine;
  try {
    // Generous: on a loaded machine a node takes many seconds to build its API.
    await svcd.waitForLog('API listening', 120_000);
    listening = await svcd.waitForLog('client listener started', 120_000);
  } catch (err) {
    await svcd.stop();
    throw new Error(
      `node ${id} did not start: ${(err as Error).message}\n${svcd.stdoutLines.slice(-20).join('\n')}`,
    );
  }
  return {
    id,
    svcd,
    api: createApiClient(`http://127.0.0.1:${apiPort}/api/v1`),
    apiPort,
    agentUrl: `ws://127.0.0.1:${agentPort}`,
    fingerprint: String(listening.fingerprint),
  };
}

/** How the agent handles one job.run; each promise is awaited before that step. */
export interface JobPlan {
  /** The agent answers job.run (started) once this settles; default at once. */
  answerAfter?: Promise<unknown>;
  /** Until this settles the job writes a line every TICK_MS (live output); default: it ends at once. */
  finishAfter?: Promise<unknown>;
}

/** A running job writes a line this often while it waits to finish. */
const TICK_MS = 100;
/** The most lines a waiting job writes (a bound on a test that forgets to let it finish). */
const MAX_TICKS = 600;

export interface RunsAgent {
  id: string;
  link: TestAgent;
  /** Every job.run received, in order. */
  runs: JobRun[];
  /** Decides each job's plan; default: answer and finish at once. */
  plan: (job: JobRun) => JobPlan;
  /** Resolves once `count` job.run requests have arrived; rejects after `withinMs` (20 s). */
  received(count: number, withinMs?: number): Promise<void>;
}

/** An agent of client `clientId` connected to `node`; its jobs succeed with `<id> ran <command>` on stdout. */
export async function connectRunsAgent(node: RunsNode, clientId: string): Promise<RunsAgent> {
  const link = await connectClient(
    { url: node.agentUrl, authId: AGENT_ID, password: AGENT_PASSWORD, fingerprint: node.fingerprint },
    { client_id: clientId, name: `name of ${clientId}` },
  );
  const waiters: (() => void)[] = [];
  const agent: RunsAgent = {
    id: clientId,
    link,
    runs: [],
    plan: () => ({}),
    received: async (count, withinMs = 20_000) => {
      const deadline = Date.now() + withinMs;
      while (agent.runs.length < count) {
        if (Date.now() > deadline)
          throw new Error(
            `agent ${clientId}: ${agent.runs.length} job.run requests, not ${count}, within ${withinMs} ms`,
          );
        await Promise.race([
          new Promise<void>((wake) => waiters.push(wake)),
          new Promise((wake) => setTimeout(wake, 1_000)),
        ]);
      }
    },
  };
  link.peer.on('job.run', async (job) => {
    agent.runs.push(job);
    for (const wake of waiters.splice(0)) wake();
    const plan = agent.plan(job);
    await plan.answerAfter;
    void runJob(agent, job, plan).catch(() => undefined);
    return { pid: 4000 + agent.runs.length, started_at: new Date().toISOString() };
  });
  return agent;
}

/** The job's output on its own channel, as svc sends it: header, data frames, then its end. */
async function runJob(agent: RunsAgent, job: JobRun, plan: JobPlan): Promise<void> {
  const channel = await openSubsystem(agent.link.ssh, JOB_OUTPUT_SUBSYSTEM);
  const closed = new Promise<void>((resolve) => channel.once('close', () => resolve()));
  channel.resume();
  channel.write(encodeJobHeader({ jid: job.jid, replay: false }));
  const write = (text: string) => {
    for (const frame of encodeJobData('stdout', Buffer.from(text))) channel.write(frame);
  };
  if (plan.finishAfter) {
    let finished = false;
    void plan.finishAfter.finally(() => (finished = true));
    for (let tick = 0; !finished && tick < MAX_TICKS; tick += 1) {
      write(`${agent.id} tick ${tick}\n`);
      await new Promise((resolve) => setTimeout(resolve, TICK_MS));
    }
  }
  write(`${agent.id} ran ${job.command}\n`);
  channel.write(
    encodeJobEnd({
      status: 'successful',
      exit_code: 0,
      finished_at: new Date().toISOString(),
      error: '',
      stdout_truncated: false,
      stderr_truncated: false,
    }),
  );
  await closed;
}

/** A promise the test settles when it wants (a gate for an agent's step). */
export function gate(): { opened: Promise<void>; open(): void } {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}
