import { describe, expect, test } from 'vitest';
import { ControlError, ControlPeer } from '../src/control-peer.js';
import { duplexPair } from '../../../test-support/duplex-pair.js';
import { TEST_FACTS } from '../../../test-support/facts.js';

const facts = TEST_FACTS;
const hello = {
  client_id: 'c1',
  name: 'one',
  session_id: 's1',
  version: '0.1.0',
  tags: [],
  labels: {},
  facts,
};

function peers(timeoutMs = 2000) {
  const [a, b] = duplexPair();
  const problems: string[] = [];
  const agent = new ControlPeer(a, { side: 'agent', requestTimeoutMs: timeoutMs });
  const server = new ControlPeer(b, {
    side: 'server',
    requestTimeoutMs: timeoutMs,
    onProtocolError: (p) => problems.push(p),
  });
  return { agent, server, a, b, problems };
}

describe('ControlPeer', () => {
  test('a request gets its handler reply, validated on both ends', async () => {
    const { agent, server } = peers();
    server.on('hello', (payload) => ({
      server_version: `saw ${payload.client_id}`,
      keepalive_interval_ms: 1000,
    }));
    await expect(agent.request('hello', hello)).resolves.toEqual({
      server_version: 'saw c1',
      keepalive_interval_ms: 1000,
    });
  });

  test('many concurrent requests are matched to their own replies', async () => {
    const { agent, server } = peers();
    agent.on('tunnel.allowed', async ({ port }) => {
      await new Promise((r) => setTimeout(r, port % 7));
      return { allowed: port % 2 === 0 };
    });
    const ports = Array.from({ length: 50 }, (_, i) => i + 1);
    const replies = await Promise.all(
      ports.map((port) => server.request('tunnel.allowed', { host: 'h', port })),
    );
    expect(replies.map((r) => r.allowed)).toEqual(ports.map((p) => p % 2 === 0));
  });

  test('an invalid payload is refused by the receiver with invalid_payload', async () => {
    const { agent, server } = peers();
    server.on('hello', () => ({ server_version: 'x', keepalive_interval_ms: 1 }));
    const bad = agent.request('hello', { ...hello, client_id: '' });
    await expect(bad).rejects.toMatchObject({ code: 'invalid_payload' });
    await expect(bad).rejects.toBeInstanceOf(ControlError);
  });

  test('types without a handler, and types the sender may not send, are answered unknown_type', async () => {
    const { agent, server } = peers();
    await expect(agent.request('hello', hello)).rejects.toMatchObject({ code: 'unknown_type' });
    // tunnel.check_port goes server → agent only; the server end refuses it even with a handler.
    server.on('tunnel.check_port', () => ({ open: true }));
    await expect(
      agent.request('tunnel.check_port', { host: 'h', port: 1, timeout_ms: 10 }),
    ).rejects.toMatchObject({
      code: 'unknown_type',
    });
  });

  test('a handler error becomes an error reply; the channel keeps working', async () => {
    const { agent, server } = peers();
    let calls = 0;
    server.on('ping', () => {
      calls += 1;
      if (calls === 1) throw new Error('boom');
      return {};
    });
    await expect(agent.request('ping', {})).rejects.toMatchObject({ code: 'failed', message: 'boom' });
    await expect(agent.request('ping', {})).resolves.toEqual({});
  });

  test('a request without a reply times out without stalling later ones', async () => {
    const { agent, server } = peers(150);
    let first = true;
    server.on('ping', async () => {
      if (first) {
        first = false;
        await new Promise((r) => setTimeout(r, 400));
      }
      return {};
    });
    await expect(agent.request('ping', {})).rejects.toThrow(/no reply within 150 ms/);
    await expect(agent.request('ping', {})).resolves.toEqual({});
  });

  test('notifications reach the handler and get no reply', async () => {
    const { agent, server, a } = peers();
    const seen = new Promise((resolve) =>
      server.on('facts.update', (payload) => resolve(payload.facts.hostname)),
    );
    const written: string[] = [];
    a.on('data', (chunk: Buffer) => written.push(chunk.toString()));
    agent.notify('facts.update', { tags: ['x'], labels: {}, facts });
    expect(await seen).toBe(TEST_FACTS.hostname);
    await new Promise((r) => setTimeout(r, 20));
    expect(written).toEqual([]);
  });

  test('closing rejects pending requests', async () => {
    const { agent, server } = peers();
    server.on('ping', () => new Promise(() => undefined));
    const pending = agent.request('ping', {});
    agent.close();
    await expect(pending).rejects.toThrow(/closed/);
    await expect(agent.request('ping', {})).rejects.toThrow(/closed/);
  });

  test('garbage on the wire is a protocol error that closes the channel', async () => {
    const { server, a, problems } = peers();
    a.write('this is not json\n');
    await new Promise((r) => setTimeout(r, 20));
    expect(problems).toEqual(['control message is not JSON']);
    expect(server.isClosed).toBe(true);
  });
});
