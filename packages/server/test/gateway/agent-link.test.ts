import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TEST_FACTS, connectClient } from '../../../../test-support/agent-client.js';
import { SVCD_VERSION } from '../../src/version.js';
import { AUTH, clientRecord, logsWith, startGatewayServer, waitFor, type GatewayServer } from './helpers.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

describe('an agent connecting over the agent link', () => {
  let t: GatewayServer;
  beforeAll(async () => {
    t = await startGatewayServer({ server: { keepalive_interval: '5s' } });
  });
  afterAll(() => t?.stop());

  test('hello is answered and the client is listed with every field and a masked address', async () => {
    const agent = await connectClient(t.agent(), {
      client_id: 'web-1',
      name: 'Web server 1',
      version: '0.1.0',
      tags: ['web', 'prod'],
      labels: { city: 'Cologne', team: 'ops' },
    });
    try {
      expect(agent.reply).toEqual({ server_version: SVCD_VERSION, keepalive_interval_ms: 5000 });
      const res = await t.api.get('/clients', { auth: AUTH });
      expect(res.status).toBe(200);
      expect(res.json.meta).toEqual({ count: 1 });
      const [record] = res.json.data;
      expect(Object.keys(record)).toEqual([
        'id',
        'name',
        'os',
        'os_arch',
        'os_family',
        'os_kernel',
        'os_full_name',
        'os_version',
        'os_virtualization_system',
        'os_virtualization_role',
        'cpu_family',
        'cpu_model',
        'cpu_model_name',
        'cpu_vendor',
        'num_cpus',
        'mem_total',
        'timezone',
        'hostname',
        'ipv4',
        'ipv6',
        'tags',
        'labels',
        'version',
        'address',
        'tunnels',
        'connection_state',
        'connected_at',
        'disconnected_at',
        'client_auth_id',
      ]);
      expect(record).toMatchObject({
        ...TEST_FACTS,
        id: 'web-1',
        name: 'Web server 1',
        tags: ['web', 'prod'],
        labels: { city: 'Cologne', team: 'ops' },
        version: '0.1.0',
        tunnels: [],
        connection_state: 'connected',
        disconnected_at: null,
        client_auth_id: 'agents-a',
      });
      expect(record.connected_at).toMatch(ISO);
      // The agent's local port is on the server's side of the loopback connection.
      const localPort = (agent.ws as unknown as { _socket: { localPort: number } })._socket.localPort;
      expect(record.address).toBe(`127.0.0.x:${localPort}`);
      // GET /clients/{id} adds the ids of the client's groups (none here), as OpenRPort does.
      expect(await clientRecord(t, 'web-1')).toEqual({ ...record, groups: [] });

      const status = await t.api.get('/status', { auth: AUTH });
      expect(status.json.data).toMatchObject({ clients_connected: 1, clients_disconnected: 0 });
      expect(logsWith(t, 'client connected').at(-1)).toMatchObject({
        client_id: 'web-1',
        client_auth_id: 'agents-a',
      });
    } finally {
      await agent.close();
    }
  });

  test('the server answers the agent pings and takes facts updates', async () => {
    const agent = await connectClient(t.agent(), { client_id: 'web-2' });
    try {
      await expect(agent.peer.request('ping', {})).resolves.toEqual({});
      agent.peer.notify('facts.update', {
        tags: ['updated'],
        labels: { role: 'db' },
        facts: { ...TEST_FACTS, hostname: 'renamed-host', num_cpus: 8 },
      });
      const record = await waitFor(async () => {
        const r = await clientRecord(t, 'web-2');
        return r?.hostname === 'renamed-host' ? r : undefined;
      });
      expect(record).toMatchObject({ tags: ['updated'], labels: { role: 'db' }, num_cpus: 8 });
    } finally {
      await agent.close();
    }
  });

  test('a second hello on the same connection is refused', async () => {
    const agent = await connectClient(t.agent(), { client_id: 'web-3' });
    try {
      await expect(agent.hello({ client_id: 'other' })).rejects.toMatchObject({ code: 'failed' });
      expect(await clientRecord(t, 'other')).toBeUndefined();
    } finally {
      await agent.close();
    }
  });

  test('after a disconnect the client stays listed as disconnected and /status counts it', async () => {
    const agent = await connectClient(t.agent('agents-b'), { client_id: 'leaving' });
    await agent.close();
    const record = await waitFor(async () => {
      const r = await clientRecord(t, 'leaving');
      return r?.connection_state === 'disconnected' ? r : undefined;
    });
    expect(record.disconnected_at).toMatch(ISO);
    expect(record.client_auth_id).toBe('agents-b');
    const status = await t.api.get('/status', { auth: AUTH });
    const { clients_connected, clients_disconnected } = status.json.data;
    expect(clients_connected).toBe(0);
    expect(clients_disconnected).toBe(4);
    expect(logsWith(t, 'client disconnected').some((l) => l.client_id === 'leaving')).toBe(true);
  });
});
