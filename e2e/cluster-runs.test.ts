/**
 * Multi-client runs across a cluster (issue 26 §3, §6): three svcd nodes on one PostgreSQL database and a
 * nats-server of the test's own, agents in this process speaking the real link to each node. A run coordinated
 * by one node sends one request per other node carrying all the jobs of a step; /ws/commands and the follow
 * socket on one node show the output and final records of clients held by the others; a coordinator killed with
 * -9 mid-run leaves its run to another node, whose children on live nodes still complete.
 */
import { connect, type NatsConnection, type Subscription } from 'nats';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { WebSocket } from 'ws';
import { basicHeader } from '../test-support/api-client.js';
import {
  connectRunsAgent,
  gate,
  startRunsNode,
  startSharedParts,
  type RunsAgent,
  type RunsNode,
  type SharedParts,
} from '../test-support/cluster-harness-runs.js';
import { E2E_ADMIN } from '../test-support/e2e-setup.js';
import {
  DEFAULT_MAX_PAYLOAD,
  MAX_JOBS_PER_MESSAGE,
  encodedPartBytes,
  splitJobBatch,
  type BatchPart,
} from '../packages/server/src/cluster/job-batches.js';

/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-return -- tests inspect arbitrary JSON */
type Json = any;

const ADMIN = { basic: [E2E_ADMIN.username, E2E_ADMIN.password] as [string, string] };
const HEARTBEAT_MS = 1_000;
/** Clients per node: 7 × 3 = 21, so a run of 20 has clients on every node. */
const PER_NODE = 7;

let shared: SharedParts;
let observer: NatsConnection;
const nodes: Record<'a' | 'b' | 'c', RunsNode | undefined> = { a: undefined, b: undefined, c: undefined };
const agents = new Map<string, RunsAgent>();

const node = (id: 'a' | 'b' | 'c'): RunsNode => {
  const found = nodes[id];
  if (!found) throw new Error(`node ${id} did not start`);
  return found;
};
const agent = (id: string): RunsAgent => {
  const found = agents.get(id);
  if (!found) throw new Error(`no agent ${id}`);
  return found;
};

/** Polls (bounded) until `check` passes: another node's writes have no event the test can await. */
async function eventually<T>(
  what: string,
  read: () => Promise<T>,
  check: (value: T) => boolean,
  withinMs = 20_000,
) {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${withinMs} ms: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function startRun(via: RunsNode, body: Record<string, unknown>): Promise<string> {
  const res = await via.api.post('/commands', body, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data.jid as string;
}

async function runOf(via: RunsNode, jid: string): Promise<Json> {
  const res = await via.api.get(`/commands/${jid}`, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data;
}

/** The dispatch requests nodes send each other (`<prefix>.node.<id>.dispatch`), as seen on NATS. */
async function countDispatches(): Promise<{
  seen: { node: string; op: string; jobs: number }[];
  stop(): void;
}> {
  const seen: { node: string; op: string; jobs: number }[] = [];
  const subscription: Subscription = observer.subscribe(`${shared.prefix}.node.*.dispatch`);
  // The server has the subscription before any node sends.
  await observer.flush();
  void (async () => {
    for await (const message of subscription) {
      const request = JSON.parse(new TextDecoder().decode(message.data)) as { op: string; args: Json[] };
      seen.push({
        node: message.subject.split('.')[2] ?? '',
        op: request.op,
        jobs: request.op === 'runJobs' ? request.args[0].jobs.length : 1,
      });
    }
  })();
  return { seen, stop: () => subscription.unsubscribe() };
}

interface Socket {
  messages: Json[];
  when(check: (messages: Json[]) => boolean, withinMs?: number): Promise<void>;
  closed: Promise<number>;
  send(body: unknown): void;
}

/** A WebSocket on the node's API (as the console opens it) collecting every message. */
function openSocket(via: RunsNode, path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${via.apiPort}/api/v1${path}`, {
      headers: {
        authorization: basicHeader(E2E_ADMIN.username, E2E_ADMIN.password),
        origin: `http://127.0.0.1:${via.apiPort}`,
      },
    });
    const messages: Json[] = [];
    const waiters: (() => void)[] = [];
    ws.on('message', (data) => {
      messages.push(JSON.parse((data as Buffer).toString('utf8')));
      for (const wake of waiters.splice(0)) wake();
    });
    const closed = new Promise<number>((done) =>
      ws.once('close', (code) => {
        done(code);
        for (const wake of waiters.splice(0)) wake();
      }),
    );
    ws.once('unexpected-response', (_req, res) => reject(new Error(`socket refused: ${res.statusCode}`)));
    ws.once('open', () =>
      resolve({
        messages,
        closed,
        send: (body) => ws.send(JSON.stringify(body)),
        when: async (check, withinMs = 20_000) => {
          const deadline = Date.now() + withinMs;
          while (!check(messages)) {
            if (Date.now() > deadline || ws.readyState === WebSocket.CLOSED)
              throw new Error(`socket ${path}: not seen within ${withinMs} ms: ${JSON.stringify(messages)}`);
            await Promise.race([
              new Promise<void>((wake) => waiters.push(wake)),
              new Promise((wake) => setTimeout(wake, 1_000)),
            ]);
          }
        },
      }),
    );
  });
}

const finals = (messages: Json[]) => messages.filter((m) => typeof m.status === 'string');
const textOf = (messages: Json[], clientId: string) =>
  messages
    .filter((m) => m.status === undefined && m.client_id === clientId)
    .map((m) => m.result.stdout as string)
    .join('');

beforeAll(async () => {
  shared = await startSharedParts('svcruns');
  observer = await connect({ servers: shared.nats.url });
  // One after the other: the first creates the schema.
  for (const id of ['a', 'b', 'c'] as const)
    nodes[id] = await startRunsNode(shared, `node-${id}`, HEARTBEAT_MS);
  for (const id of ['a', 'b', 'c'] as const)
    for (let i = 1; i <= PER_NODE; i += 1)
      agents.set(`${id}${i}`, await connectRunsAgent(node(id), `${id}${i}`));
  // Every node lists every client connected (the others' within a heartbeat).
  for (const id of ['a', 'b', 'c'] as const)
    await eventually(
      `node ${id} listing all clients connected`,
      async () => {
        const res = await node(id).api.get('/clients?fields[clients]=id,connection_state', {
          auth: ADMIN,
        });
        return (res.json.data as { connection_state: string }[]).filter(
          (c) => c.connection_state === 'connected',
        ).length;
      },
      (connected) => connected === 3 * PER_NODE,
    );
}, 300_000);

afterAll(async () => {
  await Promise.allSettled([...agents.values()].map((a) => a.link.close()));
  await Promise.allSettled(Object.values(nodes).map((n) => n?.svcd.stop() ?? Promise.resolve()));
  await observer?.close();
  await shared?.remove();
}, 30_000);

test('a batch is split by job count and by encoded size, never past NATS max_payload', () => {
  const jobs = Array.from({ length: 1_200 }, (_, i) => ({
    clientId: `client-${i}`,
    jid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
  }));
  const small = { command: 'true', interpreter: '', cwd: '', is_sudo: false, timeout_sec: 60 };
  expect(splitJobBatch(small, jobs, 1024 * 1024).map((part) => part.at.length)).toEqual([
    MAX_JOBS_PER_MESSAGE,
    MAX_JOBS_PER_MESSAGE,
    200,
  ]);
  // A 160 KiB script (the largest allowed, base64) goes once per message, not once per job.
  const script = Buffer.alloc(160 * 1024, 'x').toString('base64');
  const big = { ...small, command: '', script };
  // A full step (256 jobs) with it fits one message of NATS's default max_payload with room to spare.
  const step = splitJobBatch(big, jobs.slice(0, 256), DEFAULT_MAX_PAYLOAD);
  expect(step).toHaveLength(1);
  expect(encodedPartBytes(step[0] as BatchPart)).toBeLessThan(240_000);
  const tight = 230 * 1024;
  const parts = splitJobBatch(big, jobs, tight);
  expect(parts.length).toBeGreaterThan(3);
  expect(parts.flatMap((part) => part.at)).toEqual(jobs.map((_, i) => i));
  for (const part of parts) expect(encodedPartBytes(part)).toBeLessThanOrEqual(tight);
});

test('a 20-client run on one node sends one batch per other node, stores each result once', async () => {
  const targets = [...agents.keys()].filter((id) => id !== 'c7');
  expect(targets).toHaveLength(20);
  const dispatches = await countDispatches();
  const jid = await startRun(node('a'), {
    command: 'echo cluster',
    client_ids: targets,
    execute_concurrently: true,
    timeout_sec: 60,
  });
  const run = await eventually(
    'the run ended',
    () => runOf(node('a'), jid),
    (data) => data.status !== 'running',
  );
  dispatches.stop();
  expect(run.status).toBe('successful');
  expect(run.jobs).toHaveLength(20);
  expect(new Set(run.jobs.map((job: Json) => job.client_id))).toEqual(new Set(targets));
  for (const job of run.jobs) expect(job.result.stdout).toBe(`${job.client_id} ran echo cluster\n`);
  // node-a's own 7 clients went straight to their connections; 6 of node-c's and 7 of node-b's in one request each.
  expect(dispatches.seen.sort((x, y) => x.node.localeCompare(y.node))).toEqual([
    { node: 'node-b', op: 'runJobs', jobs: 7 },
    { node: 'node-c', op: 'runJobs', jobs: 6 },
  ]);
  for (const id of targets)
    expect(agent(id).runs.filter((run) => run.command === 'echo cluster')).toHaveLength(1);
  // Every node reads the same run.
  expect((await runOf(node('c'), jid)).jobs).toHaveLength(20);
}, 120_000);

test('/ws/commands and the follow socket on node-a show the output and final records of node-b and node-c clients', async () => {
  const finish = gate();
  for (const id of ['b1', 'c1']) agent(id).plan = () => ({ finishAfter: finish.opened });
  try {
    const live = await openSocket(node('a'), '/ws/commands');
    live.send({
      command: 'echo live',
      client_ids: ['b1', 'c1'],
      execute_concurrently: true,
      timeout_sec: 60,
    });
    await live.when(
      (messages) => textOf(messages, 'b1').includes('b1 tick') && textOf(messages, 'c1').includes('c1 tick'),
    );
    const child = live.messages.find((m) => m.client_id === 'b1');
    const started = await node('b').api.get(`/clients/b1/commands/${child.jid as string}`, { auth: ADMIN });
    const runJid = started.json.data.multi_job_id as string;
    expect(runJid).toEqual(expect.any(String));
    // Following the run from node-a (its coordinator) and from node-c (holding only one of the clients).
    const follows = [
      await openSocket(node('a'), `/ws/commands/${runJid}`),
      await openSocket(node('c'), `/ws/commands/${runJid}`),
    ];
    for (const follow of follows)
      await follow.when(
        (messages) =>
          textOf(messages, 'b1').includes('b1 tick') && textOf(messages, 'c1').includes('c1 tick'),
      );
    finish.open();
    for (const socket of [live, ...follows]) {
      await socket.when((messages) => finals(messages).length === 2);
      const records = finals(socket.messages).sort((x: Json, y: Json) =>
        x.client_id.localeCompare(y.client_id),
      );
      expect(records.map((job: Json) => [job.client_id, job.status])).toEqual([
        ['b1', 'successful'],
        ['c1', 'successful'],
      ]);
      for (const record of records)
        expect(record.result.stdout).toContain(`${record.client_id} ran echo live`);
      expect(textOf(socket.messages, 'b1')).toContain('b1 ran echo live');
      expect(textOf(socket.messages, 'c1')).toContain('c1 ran echo live');
      expect(await socket.closed).toBe(1000);
    }
  } finally {
    finish.open();
    for (const id of ['b1', 'c1']) agent(id).plan = () => ({});
  }
}, 120_000);

test('the coordinator killed -9 mid-run: another node ends its runs, children on live nodes still complete', async () => {
  const holdB2 = gate();
  const answerB3 = gate();
  const holdC3 = gate();
  agent('b2').plan = () => ({ finishAfter: holdB2.opened });
  agent('b3').plan = () => ({ answerAfter: answerB3.opened });
  agent('c3').plan = () => ({ finishAfter: holdC3.opened });
  try {
    const before = { b2: agent('b2').runs.length, b3: agent('b3').runs.length, c3: agent('c3').runs.length };
    // One client after the other: node-a waits on b2 when it dies, c2 and b4 are never reached.
    const sequential = await startRun(node('a'), {
      command: 'echo one by one',
      client_ids: ['b2', 'c2', 'b4'],
      timeout_sec: 60,
    });
    // All at once: b3's agent has not answered job.run when node-a dies (no start record), c3 has.
    const concurrent = await startRun(node('a'), {
      command: 'echo together',
      client_ids: ['b3', 'c3'],
      execute_concurrently: true,
      timeout_sec: 60,
    });
    await agent('b2').received(before.b2 + 1);
    await agent('b3').received(before.b3 + 1);
    await agent('c3').received(before.c3 + 1);
    const startedOn = (run: Json, clientId: string) =>
      run.jobs.some((job: Json) => job.client_id === clientId && job.started_at !== null);
    await eventually(
      'b2 started',
      () => runOf(node('b'), sequential),
      (run) => startedOn(run, 'b2'),
    );
    await eventually(
      'c3 started',
      () => runOf(node('b'), concurrent),
      (run) => startedOn(run, 'c3'),
    );

    await node('a').svcd.stop();
    nodes.a = undefined;

    // Once node-a's presence expires (three heartbeats) a surviving node ends both runs it coordinated.
    const cut = await eventually(
      'the sequential run ended by another node',
      () => runOf(node('b'), sequential),
      (run) => run.jobs.length === 3,
      3 * HEARTBEAT_MS + 20_000,
    );
    const byClient = (run: Json) => Object.fromEntries(run.jobs.map((job: Json) => [job.client_id, job]));
    expect(byClient(cut).b2.status).toBe('running');
    for (const id of ['c2', 'b4']) {
      expect(byClient(cut)[id].status).toBe('failed');
      expect(byClient(cut)[id].error).toContain("svcd node 'node-a', which coordinated this run");
    }
    expect(cut.status).toBe('running');
    const unconfirmed = await eventually(
      "b3's child presumed unknown",
      () => runOf(node('c'), concurrent),
      (run) => byClient(run).b3.status === 'unknown',
    );
    expect(byClient(unconfirmed).b3.error).toContain("no start record: svcd node 'node-a'");
    expect(byClient(unconfirmed).c3.status).toBe('running');

    // The agents go on: their results, stored by the nodes holding them, finish both runs.
    holdB2.open();
    answerB3.open();
    holdC3.open();
    const done = await eventually(
      'the sequential run finished',
      () => runOf(node('c'), sequential),
      (run) => run.status !== 'running',
    );
    expect(done.status).toBe('failed');
    expect(byClient(done).b2.status).toBe('successful');
    expect(done.finished_at).toBe(byClient(done).b2.finished_at);
    const together = await eventually(
      'the concurrent run finished',
      () => runOf(node('b'), concurrent),
      (run) => run.status !== 'running',
    );
    expect(together.status).toBe('successful');
    expect(byClient(together).b3.result.stdout).toContain('b3 ran echo together');
    expect(byClient(together).c3.result.stdout).toContain('c3 ran echo together');
  } finally {
    holdB2.open();
    answerB3.open();
    holdC3.open();
  }
}, 120_000);
