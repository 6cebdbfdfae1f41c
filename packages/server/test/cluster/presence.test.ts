/**
 * Presence against a real nats-server with JetStream (its own, on a free port): compare-and-set of client keys,
 * the newest epoch winning, release only by the holder, and node keys expiring with the bucket TTL.
 */
import { connect, type NatsConnection } from 'nats';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { Presence } from '../../src/cluster/presence.js';
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
): Promise<{ presence: Presence; events: LocalClientEvents }> {
  const nc = await connect({ servers: nats.url });
  connections.push(nc);
  const presence = await Presence.open(
    nc,
    { nodeId, advertiseAddress: `${nodeId}.example`, heartbeatMs: HEARTBEAT_MS, bucket },
    log,
  );
  opened.push(presence);
  const events = new LocalClientEvents();
  presence.start(events);
  return { presence, events };
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
