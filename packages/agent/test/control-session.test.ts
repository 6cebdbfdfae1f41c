import { createServer, type AddressInfo } from 'node:net';
import { afterEach, expect, test, vi } from 'vitest';
import { ControlError, ControlPeer, createLogger } from '@svc/platform';
import type { SystemFacts } from '@svc/protocol';
import { ControlSession } from '../src/connection/control-session.js';
import { TunnelAllowList } from '../src/tunnels/tunnel-allowed.js';
import { duplexPair } from '../../../test-support/duplex-pair.js';
import { TEST_FACTS } from '../../../test-support/facts.js';

const FACTS = TEST_FACTS;

const identity = {
  client_id: 'c1',
  name: 'h',
  session_id: 's1',
  version: '0.1.0',
  tags: ['t'],
  labels: { env: 'test' },
};

const logger = createLogger({ name: 'test', level: 'silent' });
const cleanups: (() => void)[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function setup(
  options: { patterns?: string[]; facts?: () => Promise<SystemFacts>; factsIntervalMs?: number } = {},
) {
  const [agentEnd, serverEnd] = duplexPair();
  const server = new ControlPeer(serverEnd, { side: 'server', requestTimeoutMs: 2000 });
  const session = new ControlSession(agentEnd, {
    identity,
    collectFacts: options.facts ?? (() => Promise.resolve(FACTS)),
    allowList: new TunnelAllowList(options.patterns ?? []),
    logger,
    ...(options.factsIntervalMs ? { factsIntervalMs: options.factsIntervalMs } : {}),
  });
  cleanups.push(() => {
    session.stop();
    server.close();
  });
  return { server, session };
}

test('hello carries the identity and the facts, and returns the reply', async () => {
  const { server, session } = setup();
  const hello = vi.fn(() => ({ server_version: '1.0.0', keepalive_interval_ms: 15_000 }));
  server.on('hello', hello);
  await expect(session.hello()).resolves.toEqual({ server_version: '1.0.0', keepalive_interval_ms: 15_000 });
  expect(hello).toHaveBeenCalledWith({ ...identity, facts: FACTS });
});

test('a refused hello rejects with the error code', async () => {
  const { server, session } = setup();
  server.on('hello', () => {
    throw new ControlError('already_connected', 'client c1 is already connected');
  });
  await expect(session.hello()).rejects.toMatchObject({ code: 'already_connected' });
});

test('answers ping, tunnel.allowed and tunnel.check_port', async () => {
  const listener = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => listener.close());
  const port = (listener.address() as AddressInfo).port;
  const { server } = setup({ patterns: ['127.0.0.1'] });
  await expect(server.request('ping', {})).resolves.toEqual({});
  await expect(server.request('tunnel.allowed', { host: '127.0.0.1', port: 22 })).resolves.toEqual({
    allowed: true,
  });
  await expect(server.request('tunnel.allowed', { host: '10.1.1.1', port: 22 })).resolves.toEqual({
    allowed: false,
  });
  await expect(
    server.request('tunnel.check_port', { host: '127.0.0.1', port, timeout_ms: 2000 }),
  ).resolves.toEqual({ open: true });
  await expect(
    server.request('tunnel.check_port', { host: '10.1.1.1', port: 80, timeout_ms: 2000 }),
  ).resolves.toEqual({ open: false, error: '10.1.1.1:80 is not allowed by tunnel_allowed' });
});

test('pings svcd every interval and ends when a ping goes unanswered', async () => {
  vi.useFakeTimers();
  const { server, session } = setup();
  let answering = true;
  const pings = vi.fn();
  server.on('ping', () => {
    pings();
    // A handler that never settles leaves the agent's ping without a reply.
    return answering ? {} : new Promise<never>(() => undefined);
  });
  let reason: string | undefined;
  void session.ended.then((r) => (reason = r));
  session.start(1000);
  await vi.advanceTimersByTimeAsync(3100);
  expect(pings).toHaveBeenCalledTimes(3);
  expect(reason).toBeUndefined();
  answering = false;
  await vi.advanceTimersByTimeAsync(2100);
  expect(reason).toBe('svcd did not answer a ping within 1000 ms');
});

test('sends facts.update only when the facts changed', async () => {
  vi.useFakeTimers();
  let facts = FACTS;
  const { server, session } = setup({ facts: () => Promise.resolve(facts), factsIntervalMs: 60_000 });
  server.on('hello', () => ({ server_version: '1', keepalive_interval_ms: 20_000 }));
  const updates = vi.fn();
  server.on('facts.update', updates);
  await session.hello();
  session.start(600_000);
  await vi.advanceTimersByTimeAsync(60_000);
  expect(updates).not.toHaveBeenCalled();
  facts = { ...FACTS, ipv4: ['192.0.2.99'] };
  await vi.advanceTimersByTimeAsync(60_000);
  expect(updates).toHaveBeenCalledExactlyOnceWith({ tags: ['t'], labels: { env: 'test' }, facts });
  await vi.advanceTimersByTimeAsync(60_000);
  expect(updates).toHaveBeenCalledTimes(1);
});

test('ends when the channel closes', async () => {
  const { server, session } = setup();
  server.close();
  await expect(session.ended).resolves.toBe('the control channel closed');
});

test('job.run is answered failed when the session has no job runner', async () => {
  const { server } = setup();
  const job = {
    jid: '00000000-0000-4000-8000-000000000001',
    command: '/usr/bin/id',
    interpreter: '',
    cwd: '',
    is_sudo: false,
    timeout_sec: 5,
  };
  await expect(server.request('job.run', job)).rejects.toMatchObject({
    code: 'failed',
    message: 'this agent cannot run jobs',
  });
});

test("svcd's reconnect notification ends the session and says why (a draining node)", async () => {
  const { server, session } = setup();
  expect(session.askedToReconnect).toBeUndefined();
  server.notify('reconnect', { reason: 'svcd is draining' });
  await expect(session.ended).resolves.toBe('svcd asked this agent to reconnect: svcd is draining');
  expect(session.askedToReconnect).toBe('svcd is draining');
});
