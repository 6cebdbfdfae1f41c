/**
 * Two svcd nodes as one cluster (issue 26): one PostgreSQL database and one NATS (its own nats-server), real svc
 * agents on different nodes. Commands cross nodes over NATS, both nodes list every client, and a node killed
 * with -9 answers "not connected" at once and loses its clients after the presence TTL.
 */
import type { Server } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  ADMIN,
  clientStates,
  eventually,
  finished,
  finishedRun,
  jobOf,
  runCommand,
} from '../test-support/cluster-api.js';
import { TestCluster, type ClusterNode } from '../test-support/cluster-harness.js';
import type { RunningProcess } from '../test-support/process.js';
import { roundTrip, startEchoServer } from '../test-support/tcp.js';

const HEARTBEAT_MS = 1_000;

let cluster: TestCluster;
let a: ClusterNode;
let b: ClusterNode;
let agentB: RunningProcess;
let echo: Server;

beforeAll(async () => {
  echo = await startEchoServer();
  cluster = await TestCluster.start({
    name: 'cluster',
    heartbeatMs: HEARTBEAT_MS,
    // Not the API's host (127.0.0.1): tunnel_url shows it names the advertised address of the node listening.
    cluster: () => ['advertise_address = "localhost"'],
  });
  [a, b] = (await cluster.startNodes('node-a', 'node-b')) as [ClusterNode, ClusterNode];
  await Promise.all([cluster.createCredential(), cluster.createCredential('cred-c', 'cred-c-password-1')]);
  [, agentB] = await Promise.all([cluster.startAgent('agent-a', a), cluster.startAgent('agent-b', b)]);
});

afterAll(async () => {
  await cluster?.close();
  echo?.close();
});

test('every node lists the clients of every node as connected', async () => {
  await cluster.connected(['agent-a', 'agent-b'], [a, b]);
});

test('a node started while the others hold agents marks none of them disconnected', async () => {
  const c = await cluster.startNode('node-c');
  // Its start-up read the table at once: what it lists now is what it loaded, not a later refresh.
  expect(await clientStates(c.api)).toMatchObject({ 'agent-a': 'connected', 'agent-b': 'connected' });
  expect(await clientStates(a.api)).toMatchObject({ 'agent-a': 'connected', 'agent-b': 'connected' });
  const cmd = await runCommand(c.api, 'agent-b', '/usr/bin/echo via-c');
  expect(await finished(c.api, 'agent-b', cmd)).toMatchObject({
    status: 'successful',
    result: { stdout: 'via-c\n' },
  });
  await cluster.stop(c);
});

test('/status of any node lists the nodes of the cluster with their state', async () => {
  type Status = {
    cluster: { node_id: string; nodes: { node_id: string; state: string; advertise_address: string }[] };
    clients_connected: number;
  };
  for (const via of [a, b]) {
    // /status shows the nodes as read within the last second: node-c, stopped by the test before, may still be
    // in that reading for a moment.
    const { cluster: seen, clients_connected } = await eventually(
      `${via.id} listing node-a and node-b only`,
      async () => {
        const res = await via.api.get('/status', { auth: ADMIN });
        expect(res.status, res.text).toBe(200);
        return res.json.data as Status;
      },
      (status) => status.cluster.nodes.length === 2,
      5_000,
    );
    expect(clients_connected).toBe(2);
    expect(seen.node_id).toBe(via.id);
    expect(seen.nodes.map((n) => [n.node_id, n.state, n.advertise_address])).toEqual([
      ['node-a', 'live', 'localhost'],
      ['node-b', 'live', 'localhost'],
    ]);
  }
});

test('a command through one node runs on a client held by the other, its result stored once', async () => {
  const jidB = await runCommand(a.api, 'agent-b', '/usr/bin/echo via-a-on-b');
  const jidA = await runCommand(b.api, 'agent-a', '/usr/bin/echo via-b-on-a');
  const onB = await finished(a.api, 'agent-b', jidB);
  expect(onB, onB.error).toMatchObject({ status: 'successful', result: { stdout: 'via-a-on-b\n' } });
  const onA = await finished(b.api, 'agent-a', jidA);
  expect(onA).toMatchObject({ status: 'successful', result: { stdout: 'via-b-on-a\n' } });
  // The other node reads the same stored result.
  expect(await jobOf(b.api, 'agent-b', jidB)).toMatchObject({ result: { stdout: 'via-a-on-b\n' } });
});

test('a multi-client run through one node over clients of both nodes finishes with every result', async () => {
  const res = await a.api.post(
    '/commands',
    { command: '/usr/bin/echo run-wide', client_ids: ['agent-a', 'agent-b'] },
    { auth: ADMIN },
  );
  expect(res.status, res.text).toBe(200);
  // Sequential by default: the second child starts only once node-a learns the first one finished.
  const run = await finishedRun(a.api, res.json.data.jid as string);
  expect(run.status).toBe('successful');
  expect(run.jobs.map((j) => [j.client_id, j.status])).toEqual([
    ['agent-a', 'successful'],
    ['agent-b', 'successful'],
  ]);
});

test('a tunnel opened through one node listens on the node holding the client; every node lists and deletes it', async () => {
  const echoPort = (echo.address() as { port: number }).port;
  const opened = await a.api.request(
    'PUT',
    `/clients/agent-b/tunnels?${new URLSearchParams({ remote: `127.0.0.1:${echoPort}`, scheme: 'http' }).toString()}`,
    { auth: ADMIN },
  );
  expect(opened.status, opened.text).toBe(200);
  const tunnel = opened.json.data as { id: string; lport: string; tunnel_url: string };
  expect(tunnel.tunnel_url).toBe(`http://localhost:${tunnel.lport}`);
  expect(await roundTrip(Number(tunnel.lport), 'through node-b')).toBe('through node-b');
  const listed = await a.api.get('/tunnels', { auth: ADMIN });
  expect(listed.status, listed.text).toBe(200);
  expect(listed.json.data).toEqual([
    expect.objectContaining({ client_id: 'agent-b', id: tunnel.id, lport: tunnel.lport }),
  ]);
  const deleted = await a.api.request('DELETE', `/clients/agent-b/tunnels/${tunnel.id}`, { auth: ADMIN });
  expect(deleted.status, deleted.text).toBe(204);
  expect((await b.api.get('/tunnels', { auth: ADMIN })).json.data).toEqual([]);
});

test('removing a client credential through one node disconnects its client on the other', async () => {
  const agentC = await cluster.startAgent('agent-c', b, { auth: 'cred-c:cred-c-password-1' });
  await cluster.connected(['agent-c'], [a]);
  // node-a counts the connection node-b holds.
  const refused = await a.api.request('DELETE', '/clients-auth/cred-c', { auth: ADMIN });
  expect(refused.status, refused.text).toBe(409);
  const removed = await a.api.request('DELETE', '/clients-auth/cred-c?force=true', { auth: ADMIN });
  expect(removed.status, removed.text).toBe(204);
  await eventually(
    'agent-c disconnected on node-a',
    () => clientStates(a.api),
    (states) => states['agent-c'] === 'disconnected',
  );
  await agentC.stop();
});

test('a job queued through one node for an offline client is delivered by the node the client connects to', async () => {
  const first = await cluster.startAgent('agent-q', b);
  await cluster.connected(['agent-q'], [a]);
  await first.stop();
  await eventually(
    'agent-q disconnected on node-a',
    () => clientStates(a.api),
    (states) => states['agent-q'] === 'disconnected',
  );
  const res = await a.api.post(
    '/clients/agent-q/commands',
    { command: '/usr/bin/echo queued-on-a', queue_ttl: '10m' },
    { auth: ADMIN },
  );
  expect(res.status, res.text).toBe(200);
  const jid = res.json.data.jid as string;
  expect((await jobOf(a.api, 'agent-q', jid)).status).toBe('queued');
  // The client comes back on node-b: node-b finds the stored job and sends it; node-a reads the one result.
  await cluster.startAgent('agent-q', b);
  const done = await eventually(
    `queued job ${jid} delivered`,
    () => jobOf(a.api, 'agent-q', jid),
    (job) => job.status !== 'queued' && job.status !== 'running',
  );
  expect(done).toMatchObject({ status: 'successful', result: { stdout: 'queued-on-a\n' } });
}, 60_000);

test('kill -9 of a node: "not connected" at once, its clients disconnected after the TTL, reconnected elsewhere', async () => {
  await cluster.kill(b);
  // Presence still names node-b (its keys live until the TTL), but nobody answers its subject.
  const started = Date.now();
  const jid = await runCommand(a.api, 'agent-b', '/usr/bin/echo never');
  const failed = await jobOf(a.api, 'agent-b', jid);
  expect(Date.now() - started).toBeLessThan(1_000);
  expect(failed.status).toBe('failed');
  expect(failed.error).toContain('not connected');

  await eventually(
    'agent-b disconnected on node-a',
    () => clientStates(a.api),
    (states) => states['agent-b'] === 'disconnected' && states['agent-a'] === 'connected',
    HEARTBEAT_MS * 3 + 5_000,
  );
  const status = await a.api.get('/status', { auth: ADMIN });
  expect(status.json.data.cluster.nodes.map((n: { node_id: string }) => n.node_id)).toEqual(['node-a']);

  // The agent takes one server URL: it is started again pointing at node-a (a load balancer would do this).
  await agentB.stop();
  await cluster.startAgent('agent-b', a);
  const jidAgain = await runCommand(a.api, 'agent-b', '/usr/bin/echo back-on-a');
  expect(await finished(a.api, 'agent-b', jidAgain)).toMatchObject({
    status: 'successful',
    result: { stdout: 'back-on-a\n' },
  });
}, 40_000);
