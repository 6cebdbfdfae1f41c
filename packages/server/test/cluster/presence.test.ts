/**
 * Presence against a real nats-server with JetStream (its own, on a free port): compare-and-set of client keys,
 * the newest epoch winning, release only by the holder, node keys expiring with the bucket TTL, client keys
 * counting only while their node is live, and a heartbeat writing one key whatever the number of clients.
 */
import { connect, type NatsConnection } from 'nats';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { Presence, type OwnerChanges } from '../../src/cluster/presence.js';
import { pipelined } from '../../src/cluster/pipelined.js';
import type { ClientOwner } from '../../src/core/clients/client-events.js';
import { LocalClientEvents } from '../../src/core/clients/local-client-events.js';
import { startTestNats, type TestNats } from '../../../../test-support/nats.js';

const log = { info: () => undefined, warn: () => undefined };
const HEARTBEAT_MS = 200;

let nats: TestNats;
const connections: NatsConnection[] = [];
const opened: Presence[] = [];

async function node(
  nodeId: string,
  bucket: string,
  changes?: OwnerChanges,
): Promise<{ presence: Presence; events: LocalClientEvents; nc: NatsConnection }> {
  const nc = await connect({ servers: nats.url });
  connections.push(nc);
  const presence = await Presence.open(
    nc,
    {
      nodeId,
      advertiseAddress: `${nodeId}.example`,
      heartbeatMs: HEARTBEAT_MS,
      bucket,
      clientsBucket: `${bucket}_clients`,
    },
    log,
  );
  opened.push(presence);
  const events = new LocalClientEvents();
  presence.start(events, changes);
  return { presence, events, nc };
}

/** What presence told a node about take-overs. */
function recorder(): OwnerChanges & {
  took: string[];
  lostTo: [string, ClientOwner][];
  elsewhere: [string, ClientOwner][];
} {
  const took: string[] = [];
  const lostTo: [string, ClientOwner][] = [];
  const elsewhere: [string, ClientOwner][] = [];
  return {
    took,
    lostTo,
    elsewhere,
    tookOver: (clientId) => took.push(clientId),
    lost: (clientId, owner) => lostTo.push([clientId, owner]),
    claimedElsewhere: (clientId, owner) => elsewhere.push([clientId, owner]),
  };
}

/** How many writes (puts and deletes) a KV bucket's stream has taken so far. */
async function writesTo(nc: NatsConnection, bucket: string): Promise<number> {
  const jsm = await nc.jetstreamManager();
  return (await jsm.streams.info(`KV_${bucket}`)).state.last_seq;
}

/**
 * The GET requests `from` sends to the KV bucket's stream while `work` runs, as a wiretap on `tap` sees them:
 * `from`'s messages reach the tap in order, so once its marker is there every read it made before is counted.
 */
async function kvReadsDuring(
  tap: NatsConnection,
  from: NatsConnection,
  bucket: string,
  work: () => Promise<void>,
): Promise<string[]> {
  const reads: string[] = [];
  const markerSubject = `test.${bucket}.marker.${Date.now()}`;
  let markerSeen: () => void = () => undefined;
  const marker = new Promise<void>((resolve) => (markerSeen = resolve));
  const api = tap.subscribe('$JS.API.>', {
    callback: (_err, msg) => {
      if (msg.subject.includes(`KV_${bucket}`) && msg.subject.includes('GET')) reads.push(msg.subject);
    },
  });
  const done = tap.subscribe(markerSubject, { callback: () => markerSeen() });
  await tap.flush();
  await work();
  from.publish(markerSubject);
  await marker;
  api.unsubscribe();
  done.unsubscribe();
  return reads;
}

/** Polls (bounded) until presence says what `check` wants: KV writes follow the events asynchronously. */
async function until<T>(read: () => Promise<T>, check: (value: T) => boolean, withinMs = 5_000): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline) throw new Error(`not reached: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

beforeAll(async () => {
  nats = await startTestNats();
});

afterAll(async () => {
  for (const presence of opened) await presence.close().catch(() => undefined);
  for (const nc of connections) await nc.close();
  await nats?.stop();
});

test('the newest epoch holds the client; an older attach or a stale detach elsewhere does not take it back', async () => {
  const a = await node('a', 'p1_presence');
  const b = await node('b', 'p1_presence');
  a.events.publish('attached', { clientId: 'c/1 ü', owner: { nodeId: 'a', epoch: 100 } });
  expect(
    await until(
      () => a.presence.owner('c/1 ü'),
      (o) => o !== undefined,
    ),
  ).toEqual({ nodeId: 'a', epoch: 100 });

  b.events.publish('attached', { clientId: 'c/1 ü', owner: { nodeId: 'b', epoch: 200 } });
  expect(
    await until(
      () => a.presence.owner('c/1 ü'),
      (o) => o?.nodeId === 'b',
    ),
  ).toEqual({ nodeId: 'b', epoch: 200 });

  // Node a still thinks it holds epoch 100: its detach must not delete b's key, nor its heartbeat rewrite it.
  a.events.publish('detached', { clientId: 'c/1 ü', owner: { nodeId: 'a', epoch: 100 } });
  a.events.publish('attached', { clientId: 'c/1 ü', owner: { nodeId: 'a', epoch: 150 } });
  await new Promise((r) => setTimeout(r, HEARTBEAT_MS * 2));
  expect(await b.presence.owner('c/1 ü')).toEqual({ nodeId: 'b', epoch: 200 });

  b.events.publish('detached', { clientId: 'c/1 ü', owner: { nodeId: 'b', epoch: 200 } });
  expect(
    await until(
      () => b.presence.owner('c/1 ü'),
      (o) => o?.nodeId !== 'b',
    ),
  ).not.toEqual(expect.objectContaining({ nodeId: 'b' }));
});

test('node keys list the live nodes; a node that stops renewing is gone after three heartbeats', async () => {
  const a = await node('a', 'p2_presence');
  const b = await node('b', 'p2_presence');
  expect((await a.presence.nodes()).map((n) => [n.node_id, n.advertise_address]).sort()).toEqual([
    ['a', 'a.example'],
    ['b', 'b.example'],
  ]);
  b.events.publish('attached', { clientId: 'held-by-b', owner: { nodeId: 'b', epoch: 1 } });
  await until(
    () => a.presence.owner('held-by-b'),
    (o) => o?.nodeId === 'b',
  );
  // Silence b without its goodbye (as a crash would): stop its connection, not its presence.
  const started = Date.now();
  await connections[connections.length - 1]?.close();
  await until(
    () => a.presence.liveNodeIds(),
    (ids) => !ids.has('b'),
    HEARTBEAT_MS * 3 + 3_000,
  );
  expect(Date.now() - started).toBeGreaterThanOrEqual(HEARTBEAT_MS * 2);
  expect(
    await until(
      () => a.presence.owner('held-by-b'),
      (o) => o === undefined,
      HEARTBEAT_MS * 3 + 3_000,
    ),
  ).toBe(undefined);
});

test('a node holding 3,000 clients keeps every key over many heartbeats, each heartbeat writing only its node key', async () => {
  const a = await node('a', 'p3_presence');
  const b = await node('b', 'p3_presence');
  const ids = Array.from({ length: 3_000 }, (_, n) => `many-${n}`);
  for (const [n, clientId] of ids.entries())
    a.events.publish('attached', { clientId, owner: { nodeId: 'a', epoch: 1_000 + n } });
  await until(
    () => writesTo(a.nc, 'p3_presence_clients'),
    (writes) => writes >= ids.length,
    30_000,
  );
  const clientWrites = await writesTo(a.nc, 'p3_presence_clients');
  const nodeWrites = await writesTo(a.nc, 'p3_presence');
  const started = Date.now();
  // Ten heartbeats of node a (its node key written ten times), over three times the node bucket's TTL.
  await until(
    () => writesTo(a.nc, 'p3_presence'),
    (writes) => writes >= nodeWrites + 20,
    HEARTBEAT_MS * 30,
  );
  const beats = Math.ceil((Date.now() - started) / HEARTBEAT_MS) + 1;
  expect(await writesTo(a.nc, 'p3_presence_clients')).toBe(clientWrites);
  // Two nodes, one key each per heartbeat.
  expect((await writesTo(a.nc, 'p3_presence')) - nodeWrites).toBeLessThanOrEqual(2 * beats);
  // Every key still names node a, seen from node b.
  const owners = new Map<string, ClientOwner | undefined>();
  await pipelined(ids, 64, async (clientId) => {
    owners.set(clientId, await b.presence.owner(clientId));
  });
  const notA = ids.filter((clientId) => owners.get(clientId)?.nodeId !== 'a');
  expect(notA).toEqual([]);
  expect(owners.get('many-2999')).toEqual({ nodeId: 'a', epoch: 3_999 });
});

test('a newer claim on another node reaches the holder through the key watch, without a take-over message', async () => {
  const changes = recorder();
  const a = await node('a', 'p4_presence', changes);
  const b = await node('b', 'p4_presence');
  a.events.publish('attached', { clientId: 'watched', owner: { nodeId: 'a', epoch: 100 } });
  await until(
    () => b.presence.owner('watched'),
    (o) => o?.nodeId === 'a',
  );
  b.events.publish('attached', { clientId: 'watched', owner: { nodeId: 'b', epoch: 200 } });
  await until(
    () => Promise.resolve(changes.lostTo),
    (lost) => lost.length > 0,
  );
  expect(changes.lostTo[0]).toEqual(['watched', { nodeId: 'b', epoch: 200 }]);
  expect(changes.took).toEqual([]);
});

test('a claim by another live node of a client this node does not hold is told at once; a dead node’s is not', async () => {
  const changes = recorder();
  const a = await node('a', 'p8_presence', changes);
  const b = await node('b', 'p8_presence');
  await until(
    () => a.presence.liveNodeIds(),
    (live) => live.has('b'),
  );
  b.events.publish('attached', { clientId: 'arriving', owner: { nodeId: 'b', epoch: 300 } });
  await until(
    () => Promise.resolve(changes.elsewhere),
    (told) => told.length > 0,
  );
  expect(changes.elsewhere).toEqual([['arriving', { nodeId: 'b', epoch: 300 }]]);
  // A key naming a node that is not live (a dead node's, or a forged one) is not taken for a connection.
  const raw = await a.nc.jetstream().views.kv('p8_presence_clients', { bindOnly: true });
  await raw.put(
    `c.${Buffer.from('ghostly').toString('base64url')}`,
    JSON.stringify({ nodeId: 'ghost', epoch: 1 }),
  );
  b.events.publish('attached', { clientId: 'second', owner: { nodeId: 'b', epoch: 301 } });
  await until(
    () => Promise.resolve(changes.elsewhere),
    (told) => told.length > 1,
  );
  expect(changes.elsewhere.map(([id]) => id)).toEqual(['arriving', 'second']);
  expect(changes.lostTo).toEqual([]);
});

test('a node finds which node holds a client in its watch of the keys, without a request to NATS', async () => {
  const a = await node('a', 'p7_presence');
  const b = await node('b', 'p7_presence');
  const ids = Array.from({ length: 50 }, (_, i) => `watch-${i}`);
  ids.forEach((clientId, i) =>
    b.events.publish('attached', { clientId, owner: { nodeId: 'b', epoch: i + 1 } }),
  );
  for (const clientId of ids)
    await until(
      () => a.presence.owner(clientId),
      (o) => o?.nodeId === 'b',
    );

  // Every request node a sends to JetStream passes the server as a message a wiretap can count.
  const tap = await connect({ servers: nats.url });
  connections.push(tap);
  let owners: (ClientOwner | undefined)[] = [];
  const reads = await kvReadsDuring(tap, a.nc, 'p7_presence_clients', async () => {
    owners = await Promise.all(ids.map((clientId) => a.presence.owner(clientId)));
  });
  expect(owners).toEqual(ids.map((_, i) => ({ nodeId: 'b', epoch: i + 1 })));
  expect(reads).toEqual([]);

  // A key deleted (the agent left) is gone from the watch too.
  b.events.publish('detached', { clientId: 'watch-0', owner: { nodeId: 'b', epoch: 1 } });
  await until(
    () => a.presence.owner('watch-0'),
    (o) => o === undefined,
  );

  // Agents of b arriving at a (a failover): a claims their keys from the revisions its watch knows, unread.
  const arriving = ids.slice(1, 11);
  const claimReads = await kvReadsDuring(tap, a.nc, 'p7_presence_clients', async () => {
    arriving.forEach((clientId, i) =>
      a.events.publish('attached', { clientId, owner: { nodeId: 'a', epoch: 1_000 + i } }),
    );
    for (const [i, clientId] of arriving.entries())
      await until(
        () => b.presence.owner(clientId),
        (o) => o?.nodeId === 'a' && o.epoch === 1_000 + i,
      );
  });
  expect(claimReads).toEqual([]);
});

test('a key naming a node that is gone counts for nothing: any epoch takes it over, no take-over is told, forget deletes the rest', async () => {
  const changes = recorder();
  const a = await node('a', 'p5_presence', changes);
  const b = await node('b', 'p5_presence');
  b.events.publish('attached', { clientId: 'orphan-1', owner: { nodeId: 'b', epoch: 500 } });
  b.events.publish('attached', { clientId: 'orphan-2', owner: { nodeId: 'b', epoch: 500 } });
  await until(
    () => a.presence.owner('orphan-2'),
    (o) => o?.nodeId === 'b',
  );
  // b dies without its goodbye: its node key expires, its client keys stay but name a node that is gone.
  await b.nc.close();
  await until(
    () => a.presence.liveNodeIds(),
    (live) => !live.has('b'),
    HEARTBEAT_MS * 3 + 3_000,
  );
  expect(await a.presence.owner('orphan-1')).toBe(undefined);
  a.events.publish('attached', { clientId: 'orphan-1', owner: { nodeId: 'a', epoch: 100 } });
  expect(
    await until(
      () => a.presence.owner('orphan-1'),
      (o) => o !== undefined,
    ),
  ).toEqual({ nodeId: 'a', epoch: 100 });
  expect(changes.took).toEqual([]);
  expect(changes.lostTo).toEqual([]);

  const raw = await a.nc.jetstream().views.kv('p5_presence_clients', { bindOnly: true });
  const key = `c.${Buffer.from('orphan-2').toString('base64url')}`;
  expect((await raw.get(key))?.operation).toBe('PUT');
  await a.presence.forget('b', ['orphan-1', 'orphan-2']);
  expect((await raw.get(key))?.operation).toBe('DEL');
  expect(await a.presence.owner('orphan-1')).toEqual({ nodeId: 'a', epoch: 100 });
});

test('while a node of the older layout (client keys in the node bucket) is live, each reaches the other’s clients', async () => {
  const changes = recorder();
  const a = await node('a', 'p6_presence', changes);
  // The older node, as svcd before `<prefix>_clients` did it: its node key and its client keys in one TTL
  // bucket, all put again every heartbeat.
  const bucket = await a.nc.jetstream().views.kv('p6_presence', { bindOnly: true });
  const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
  const keyOf = (clientId: string) => `c.${Buffer.from(clientId).toString('base64url')}`;
  const started = new Date().toISOString();
  let olderHolds: Record<string, number> = { 'held-by-older': 5 };
  const olderBeat = async () => {
    await bucket.put(
      'n.older',
      json({ node_id: 'older', advertise_address: 'o.example', started_at: started, seen_at: started }),
    );
    for (const [clientId, epoch] of Object.entries(olderHolds))
      await bucket.put(keyOf(clientId), json({ nodeId: 'older', epoch }));
  };
  const olderView = async (clientId: string) => {
    const entry = await bucket.get(keyOf(clientId));
    return entry?.operation === 'PUT' ? entry.json<ClientOwner>() : undefined;
  };
  await olderBeat();
  const timer = setInterval(() => void olderBeat().catch(() => undefined), HEARTBEAT_MS);
  try {
    expect(
      await until(
        () => a.presence.owner('held-by-older'),
        (o) => o !== undefined,
      ),
    ).toEqual({ nodeId: 'older', epoch: 5 });

    // Node a's client is written where the older node looks, and put again every heartbeat there (TTL).
    a.events.publish('attached', { clientId: 'held-by-a', owner: { nodeId: 'a', epoch: 7 } });
    await until(
      () => olderView('held-by-a'),
      (o) => o !== undefined,
    );
    const writes = await writesTo(a.nc, 'p6_presence');
    await until(
      () => writesTo(a.nc, 'p6_presence'),
      (n) => n >= writes + 16,
      HEARTBEAT_MS * 30,
    );
    expect(await olderView('held-by-a')).toEqual({ nodeId: 'a', epoch: 7 });

    // The older node takes that client over (a newer connection there): node a hears of it by its heartbeat.
    olderHolds = { ...olderHolds, 'held-by-a': 9 };
    await olderBeat();
    await until(
      () => Promise.resolve(changes.lostTo),
      (lost) => lost.length > 0,
    );
    expect(changes.lostTo[0]).toEqual(['held-by-a', { nodeId: 'older', epoch: 9 }]);
  } finally {
    clearInterval(timer);
  }
  // Once the older node is gone its keys count for nothing.
  await bucket.delete('n.older');
  expect(
    await until(
      () => a.presence.owner('held-by-older'),
      (o) => o === undefined,
    ),
  ).toBe(undefined);
});
