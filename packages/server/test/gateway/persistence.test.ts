import { afterEach, describe, expect, test } from 'vitest';
import { connectClient } from '../../../../test-support/agent-client.js';
import { ALL_ENGINES } from '../../../../test-support/databases.js';
import { AUTH, clientRecord, startGatewayServer, waitFor, type GatewayServer } from './helpers.js';

let t: GatewayServer | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

describe.each(ALL_ENGINES)('client records on %s', (engine) => {
  test('survive a restart, marked disconnected until the agent returns', async () => {
    t = await startGatewayServer({ engine });
    const server = t;
    const gone = await connectClient(server.agent(), {
      client_id: 'gone-before',
      tags: ['a'],
      labels: { k: 'v' },
    });
    await gone.close();
    const stays = await connectClient(server.agent('agents-b'), {
      client_id: 'connected-at-stop',
      name: 'Stays',
    });
    const before = await clientRecord(server, 'connected-at-stop');
    await waitFor(
      async () => (await clientRecord(server, 'gone-before'))?.connection_state === 'disconnected',
    );

    await server.restart();
    await stays.closed; // the shutdown closed the agent's connection

    const list = await server.api.get('/clients', { auth: AUTH });
    expect(list.json.meta.count).toBe(2);
    const restored = await clientRecord(server, 'connected-at-stop');
    expect(restored).toEqual({
      ...before,
      connection_state: 'disconnected',
      disconnected_at: expect.stringMatching(/^\d{4}-/),
    });
    expect(await clientRecord(server, 'gone-before')).toMatchObject({
      tags: ['a'],
      labels: { k: 'v' },
      connection_state: 'disconnected',
    });
    const status = await server.api.get('/status', { auth: AUTH });
    expect(status.json.data).toMatchObject({ clients_connected: 0, clients_disconnected: 2 });

    const back = await connectClient(server.agent('agents-b'), { client_id: 'connected-at-stop' });
    try {
      expect(await clientRecord(server, 'connected-at-stop')).toMatchObject({
        connection_state: 'connected',
        disconnected_at: null,
      });
    } finally {
      await back.close();
    }
  });
});

describe('purging disconnected clients', () => {
  test('deletes clients disconnected longer than keep_disconnected_clients, keeps the others', async () => {
    t = await startGatewayServer({
      server: {
        purge_disconnected_clients: true,
        keep_disconnected_clients: '1s',
        purge_disconnected_clients_interval: '1s',
      },
    });
    const server = t;
    const old = await connectClient(server.agent(), { client_id: 'old' });
    await old.close();
    const connected = await connectClient(server.agent(), { client_id: 'still-here' });
    try {
      await waitFor(async () => (await clientRecord(server, 'old')) === undefined, 5000, 'the purge');
      expect(await clientRecord(server, 'still-here')).toMatchObject({ connection_state: 'connected' });
      // Gone from the database too.
      await server.restart();
      await connected.closed;
      const list = await server.api.get('/clients', { auth: AUTH });
      expect(list.json.data.map((c: { id: string }) => c.id)).toEqual(['still-here']);
    } finally {
      await connected.close();
    }
  });

  test('keeps disconnected clients when purging is off', async () => {
    t = await startGatewayServer({
      server: { keep_disconnected_clients: '1s', purge_disconnected_clients_interval: '1s' },
    });
    const agent = await connectClient(t.agent(), { client_id: 'kept' });
    await agent.close();
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(await clientRecord(t, 'kept')).toMatchObject({ connection_state: 'disconnected' });
  });
});
