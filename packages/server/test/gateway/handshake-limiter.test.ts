import { afterEach, describe, expect, test } from 'vitest';
import { WebSocket } from 'ws';
import { connectClient } from '../../../../test-support/agent-client.js';
import { HandshakeLimiter, HandshakeRefused } from '../../src/gateway/handshake-limiter.js';
import { handshakeConcurrency } from '../../src/gateway/agent-link.js';
import { AUTH, logsWith, startGatewayServer, waitFor, type GatewayServer } from './helpers.js';

describe('HandshakeLimiter', () => {
  test('admits up to the limit, queues in order, refuses beyond the queue', async () => {
    const limiter = new HandshakeLimiter({ concurrent: 2, queueLimit: 2, queueWaitMs: 10_000 });
    const a = await limiter.acquire();
    await limiter.acquire();
    const order: string[] = [];
    const c = limiter.acquire().then((release) => (order.push('c'), release));
    const d = limiter.acquire().then((release) => (order.push('d'), release));
    await expect(limiter.acquire()).rejects.toMatchObject({ reason: 'queue_full' });
    expect([limiter.active, limiter.waiting]).toEqual([2, 2]);
    a();
    a(); // releasing twice frees one slot only
    (await c)();
    await d;
    expect(order).toEqual(['c', 'd']);
    expect([limiter.active, limiter.waiting]).toEqual([2, 0]);
  });

  test('a waiter leaves the queue on abort and on timeout', async () => {
    const limiter = new HandshakeLimiter({ concurrent: 1, queueLimit: 5, queueWaitMs: 50 });
    await limiter.acquire();
    const abort = new AbortController();
    const aborted = limiter.acquire(abort.signal);
    abort.abort();
    await expect(aborted).rejects.toMatchObject({ reason: 'aborted' });
    await expect(limiter.acquire()).rejects.toMatchObject({ reason: 'queue_timeout' });
    expect(limiter.waiting).toBe(0);
  });

  test('close refuses waiting and later handshakes', async () => {
    const limiter = new HandshakeLimiter({ concurrent: 1, queueLimit: 5, queueWaitMs: 10_000 });
    await limiter.acquire();
    const waiting = limiter.acquire();
    limiter.close();
    await expect(waiting).rejects.toBeInstanceOf(HandshakeRefused);
    await expect(limiter.acquire()).rejects.toMatchObject({ reason: 'closed' });
  });

  test('0 handshakes configured means half the CPUs, at least one', () => {
    expect(handshakeConcurrency(0, 8)).toBe(4);
    expect(handshakeConcurrency(0, 1)).toBe(1);
    expect(handshakeConcurrency(3, 8)).toBe(3);
  });
});

/** Opens a WebSocket that never speaks SSH, holding a handshake slot; resolves with the upgrade's status. */
function silentSocket(url: string): Promise<{ ws: WebSocket; status: number }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, 'svc-v1');
    ws.once('open', () => resolve({ ws, status: 101 }));
    ws.once('unexpected-response', (_req, res) => resolve({ ws, status: res.statusCode ?? 0 }));
    ws.once('error', reject);
  });
}

describe('the handshake limit on the agent listener', () => {
  let t: GatewayServer | undefined;
  afterEach(async () => {
    await t?.stop();
    t = undefined;
  });

  test('with one handshake at a time, simultaneous agents all get connected', async () => {
    t = await startGatewayServer({ server: { max_concurrent_ssh_handshakes: 1 } });
    const server = t;
    const agents = await Promise.all(
      Array.from({ length: 8 }, (_, i) => connectClient(server.agent(), { client_id: `storm-${i}` })),
    );
    try {
      const status = await server.api.get('/status', { auth: AUTH });
      expect(status.json.data.clients_connected).toBe(8);
    } finally {
      await Promise.all(agents.map((a) => a.close()));
    }
  });

  test('a stalled handshake times out; with the queue full, upgrades are refused with 503', async () => {
    t = await startGatewayServer({
      server: { max_concurrent_ssh_handshakes: 1 },
      // A silent socket keeps its slot here, as if it were busy.
      tuning: { handshakeTimeoutMs: 800, handshakeStallMs: 800, handshakeQueueLimit: 0 },
    });
    const server = t;
    const stalled = await silentSocket(server.url);
    expect(stalled.status).toBe(101);
    const closed = new Promise((resolve) => stalled.ws.once('close', resolve));

    const refused = await silentSocket(server.url);
    expect(refused.status).toBe(503);
    expect(logsWith(server, 'agent connection refused').at(-1)).toMatchObject({
      status: 503,
      code: 'ERR_SERVER_BUSY',
      reason: expect.stringContaining('queue_full'),
    });

    await closed;
    expect(logsWith(server, 'agent handshake timed out')).toHaveLength(1);
    // The slot is free again.
    const agent = await waitFor(() =>
      connectClient(server.agent(), { client_id: 'after-stall' }).catch(() => undefined),
    );
    await agent.close();
  });

  test('an upgrade waiting for a slot longer than upgrade_timeout is not dropped', async () => {
    t = await startGatewayServer({
      server: { max_concurrent_ssh_handshakes: 1, upgrade_timeout: '100ms' },
      tuning: { handshakeTimeoutMs: 800, handshakeStallMs: 800 },
    });
    const server = t;
    const stalled = await silentSocket(server.url);
    expect(stalled.status).toBe(101);
    const started = Date.now();
    // Waits in the queue until the stalled handshake times out, eight times upgrade_timeout.
    const agent = await connectClient(server.agent(), { client_id: 'patient' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    expect(logsWith(server, 'agent connection refused')).toEqual([]);
    await agent.close();
  });
});

describe('HandshakeLimiter turns', () => {
  test('waiters are served by address in turn, and handshakes under way first', async () => {
    const limiter = new HandshakeLimiter({ concurrent: 1, queueLimit: 100, queueWaitMs: 10_000 });
    const release = await limiter.acquire();
    const order: string[] = [];
    // Each waiter hands its slot on as soon as it gets it.
    const wait = (name: string, address: string, resuming = false) =>
      limiter.acquire(undefined, address, resuming).then((handOn) => {
        order.push(name);
        handOn();
      });
    const waiters = [
      wait('a1', 'a'),
      wait('a2', 'a'),
      wait('a3', 'a'),
      wait('b1', 'b'),
      wait('c1', 'c'),
      wait('b2', 'b'),
      wait('r1', '', true),
    ];
    expect(limiter.waiting).toBe(7);
    release();
    await Promise.all(waiters);
    expect(order).toEqual(['r1', 'a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
    expect([limiter.active, limiter.waiting]).toEqual([0, 0]);
  });

  test('a handshake under way is queued even when the queue is full', async () => {
    const limiter = new HandshakeLimiter({ concurrent: 1, queueLimit: 0, queueWaitMs: 10_000 });
    const release = await limiter.acquire();
    await expect(limiter.acquire(undefined, 'a')).rejects.toMatchObject({ reason: 'queue_full' });
    const resumed = limiter.acquire(undefined, 'a', true);
    release();
    expect(typeof (await resumed)).toBe('function');
  });
});
