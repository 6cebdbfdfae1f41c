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
import { ADMIN, eventually, finishedRun, runOf } from '../test-support/cluster-api.js';
import { TestCluster, type ClusterNode } from '../test-support/cluster-harness.js';
import { E2E_ADMIN } from '../test-support/e2e-setup.js';
import { connectLinkAgent, gate, type LinkAgent } from '../test-support/link-agent.js';
import {
  DEFAULT_MAX_PAYLOAD,
  MAX_JOBS_PER_MESSAGE,
  encodedPartBytes,
  splitJobBatch,
  type BatchPart,
} from '../packages/server/src/cluster/job-batches.js';

/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-return -- tests inspect arbitrary JSON */
type Json = any;

const HEARTBEAT_MS = 1_000;
/** `[cluster] nats_prefix` of the nodes: the subjects the test watches start with it. */
const NATS_PREFIX = 'svcruns';
/** Clients per node: 7 × 3 = 21, so a run of 20 has clients on every node. */
const PER_NODE = 7;

let cluster: TestCluster;
let observer: NatsConnection;
let a: ClusterNode;
let b: ClusterNode;
let c: ClusterNode;
const agents = new Map<string, LinkAgent>();

const agent = (id: string): LinkAgent => {
  const found = agents.get(id);
  if (!found) throw new Error(`no agent ${id}`);
  return found;
};

async function startRun(via: ClusterNode, body: Record<string, unknown>): Promise<string> {
  const res = await via.api.post('/commands', body, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data.jid as string;
}

/** The dispatch requests nodes send each other (`<prefix>.node.<id>.dispatch`), as seen on NATS. */
async function countDispatches(): Promise<{
  seen: { node: string; op: string; jobs: number }[];
  stop(): void;
}> {
  const seen: { node: string; op: string; jobs: number }[] = [];
  const subscription: Subscription = observer.subscribe(`${NATS_PREFIX}.node.*.dispatch`);
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
function openSocket(via: ClusterNode, path: string): Promise<Socket> {
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
  cluster = await TestCluster.start({
    name: 'cluster-runs',
    heartbeatMs: HEARTBEAT_MS,
    cluster: () => [`nats_prefix = "${NATS_PREFIX}"`],
  });
  observer = await connect({ servers: cluster.nats.url });
  [a, b, c] = (await cluster.startNodes('node-a', 'node-b', 'node-c')) as [
    ClusterNode,
    ClusterNode,
    ClusterNode,
  ];
  await cluster.createCredential();
  for (const [name, via] of [
    ['a', a],
    ['b', b],
    ['c', c],
  ] as const)
    for (let i = 1; i <= PER_NODE; i += 1)
      agents.set(`${name}${i}`, await connectLinkAgent(cluster.link(via), `${name}${i}`));
  // Every node lists every client connected (the others' within a heartbeat).
  await cluster.connected([...agents.keys()]);
}, 300_000);

afterAll(async () => {
  await Promise.allSettled([...agents.values()].map((linked) => linked.link.close()));
  await observer?.close();
  await cluster?.close();
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
  const jid = await startRun(a, {
    command: 'echo cluster',
    client_ids: targets,
    execute_concurrently: true,
    timeout_sec: 60,
  });
  const run = await finishedRun(a.api, jid);
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
  expect((await runOf(c.api, jid)).jobs).toHaveLength(20);
}, 120_000);

test('/ws/commands and the follow socket on node-a show the output and final records of node-b and node-c clients', async () => {
  const finish = gate();
  for (const id of ['b1', 'c1']) agent(id).plan = () => ({ finishAfter: finish.opened });
  try {
    const live = await openSocket(a, '/ws/commands');
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
    const started = await b.api.get(`/clients/b1/commands/${child.jid as string}`, { auth: ADMIN });
    const runJid = started.json.data.multi_job_id as string;
    expect(runJid).toEqual(expect.any(String));
    // Following the run from node-a (its coordinator) and from node-c (holding only one of the clients).
    const follows = [
      await openSocket(a, `/ws/commands/${runJid}`),
      await openSocket(c, `/ws/commands/${runJid}`),
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
    const sequential = await startRun(a, {
      command: 'echo one by one',
      client_ids: ['b2', 'c2', 'b4'],
      timeout_sec: 60,
    });
    // All at once: b3's agent has not answered job.run when node-a dies (no start record), c3 has.
    const concurrent = await startRun(a, {
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
      () => runOf(b.api, sequential),
      (run) => startedOn(run, 'b2'),
    );
    await eventually(
      'c3 started',
      () => runOf(b.api, concurrent),
      (run) => startedOn(run, 'c3'),
    );

    await cluster.kill(a);

    // Once node-a's presence expires (three heartbeats) a surviving node ends both runs it coordinated.
    const cut = await eventually(
      'the sequential run ended by another node',
      () => runOf(b.api, sequential),
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
      () => runOf(c.api, concurrent),
      (run) => byClient(run).b3.status === 'unknown',
    );
    expect(byClient(unconfirmed).b3.error).toContain("no start record: svcd node 'node-a'");
    expect(byClient(unconfirmed).c3.status).toBe('running');

    // The agents go on: their results, stored by the nodes holding them, finish both runs.
    holdB2.open();
    answerB3.open();
    holdC3.open();
    const done = await finishedRun(c.api, sequential);
    expect(done.status).toBe('failed');
    expect(byClient(done).b2.status).toBe('successful');
    expect(done.finished_at).toBe(byClient(done).b2.finished_at);
    const together = await finishedRun(b.api, concurrent);
    expect(together.status).toBe('successful');
    expect(byClient(together).b3.result.stdout).toContain('b3 ran echo together');
    expect(byClient(together).c3.result.stdout).toContain('c3 ran echo together');
  } finally {
    holdB2.open();
    answerB3.open();
    holdC3.open();
  }
}, 120_000);
