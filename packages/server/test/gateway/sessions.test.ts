import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { connectAgent, connectClient } from '../../../../test-support/agent-client.js';
import { AUTH, clientRecord, logsWith, startGatewayServer, waitFor, type GatewayServer } from './helpers.js';

describe('one connection per client id, keepalive', () => {
  let t: GatewayServer;
  beforeAll(async () => {
    t = await startGatewayServer({ server: { keepalive_interval: '1s' } });
  });
  afterAll(() => t?.stop());

  test('a second agent with the same client id and another session is refused; the first stays', async () => {
    const first = await connectClient(t.agent(), { client_id: 'dup', session_id: randomUUID() });
    try {
      const second = await connectAgent(t.agent('agents-b'));
      await expect(second.hello({ client_id: 'dup', session_id: randomUUID() })).rejects.toMatchObject({
        code: 'already_connected',
        message: "client 'dup' is already connected",
      });
      await second.closed; // the server closes the refused connection
      expect(logsWith(t, 'agent refused: client id already connected').at(-1)).toMatchObject({
        client_id: 'dup',
        client_auth_id: 'agents-b',
      });
      await expect(first.peer.request('ping', {})).resolves.toEqual({});
      expect(await clientRecord(t, 'dup')).toMatchObject({
        connection_state: 'connected',
        client_auth_id: 'agents-a',
      });
    } finally {
      await first.close();
    }
  });

  test('the same session reconnecting replaces the old connection', async () => {
    const session = randomUUID();
    const old = await connectClient(t.agent(), { client_id: 'same', session_id: session, name: 'old' });
    const fresh = await connectClient(t.agent(), { client_id: 'same', session_id: session, name: 'new' });
    try {
      await old.closed;
      expect(logsWith(t, 'closing agent connection').at(-1)).toMatchObject({
        client_id: 'same',
        reason: 'replaced by a new connection of the same agent session',
      });
      expect(await clientRecord(t, 'same')).toMatchObject({ connection_state: 'connected', name: 'new' });
      await expect(fresh.peer.request('ping', {})).resolves.toEqual({});
      // The old connection's end does not mark the client disconnected.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await clientRecord(t, 'same')).toMatchObject({ connection_state: 'connected' });
      const status = await t.api.get('/status', { auth: AUTH });
      expect(status.json.data.clients_connected).toBe(1);
    } finally {
      await fresh.close();
    }
  });

  test('a peer that stops answering is dropped by keepalive and its id is free again', async () => {
    const silent = await connectClient(t.agent(), { client_id: 'silent' });
    expect(silent.reply.keepalive_interval_ms).toBe(1000);
    silent.pause();
    const record = await waitFor(
      async () => {
        const r = await clientRecord(t, 'silent');
        return r?.connection_state === 'disconnected' ? r : undefined;
      },
      8000,
      'the silent client to be dropped',
    );
    expect(record.disconnected_at).not.toBeNull();
    expect(logsWith(t, 'dropping agent connection').find((l) => l.client_id === 'silent')?.reason).toBe(
      'keepalive timeout',
    );
    silent.ws.terminate();

    const back = await connectClient(t.agent(), { client_id: 'silent' });
    await back.close();
  });

  test('svcd pings only an agent it has not heard from: one that pings by itself is not pinged', async () => {
    const chatty = await connectClient(t.agent(), { client_id: 'pings-itself' });
    const quiet = await connectClient(t.agent(), { client_id: 'pings-never' });
    let chattyPinged = 0;
    chatty.peer.on('ping', () => {
      chattyPinged += 1;
      return {};
    });
    const ownPings = setInterval(() => void chatty.peer.request('ping', {}).catch(() => undefined), 400);
    try {
      // The silent one is pinged after each interval (1 s) and slack (0.5 s) of silence: wait for two of those.
      const started = Date.now();
      await new Promise<void>((resolve) => {
        let pinged = 0;
        quiet.peer.on('ping', () => {
          if (++pinged === 2) resolve();
          return {};
        });
      });
      expect(Date.now() - started).toBeGreaterThanOrEqual(2 * 1500 - 100);
      expect(chattyPinged).toBe(0);
      expect(await clientRecord(t, 'pings-itself')).toMatchObject({ connection_state: 'connected' });
    } finally {
      clearInterval(ownPings);
      await chatty.close();
      await quiet.close();
    }
  });

  test('an agent that keeps answering stays connected over several keepalive intervals', async () => {
    const agent = await connectClient(t.agent(), { client_id: 'alive' });
    try {
      await new Promise((resolve) => setTimeout(resolve, 3500));
      expect(await clientRecord(t, 'alive')).toMatchObject({ connection_state: 'connected' });
    } finally {
      await agent.close();
    }
  });
});
