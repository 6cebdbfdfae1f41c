/**
 * GET /tunnels on a real svcd in this process, with SSH agents that relay tunnel connections by echoing: every
 * tunnel of the connected clients with its client, owner and timers, in the list grammar.
 */
import { once } from 'node:events';
import { connect } from 'node:net';
import type { ClientChannel } from 'ssh2';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { connectClient, type TestAgent } from '../../../../test-support/agent-client.js';
import { freePortBlock } from '../../../../test-support/process.js';
import { AUTH, startGatewayServer, waitFor, type GatewayServer } from '../gateway/helpers.js';

/** Answers svcd's tunnel requests and echoes the bytes of each tunnel connection. */
function serveTunnels(agent: TestAgent): void {
  agent.peer.on('tunnel.allowed', () => ({ allowed: true }));
  agent.peer.on('tunnel.check_port', () => ({ open: true }));
  agent.peer.on(
    'tunnel.open',
    ({ host, port }) =>
      new Promise<Record<string, never>>((resolve, reject) =>
        agent.ssh.forwardIn(host, port, (err) => (err ? reject(err) : resolve({}))),
      ),
  );
  agent.peer.on('tunnel.close', () => ({}));
  agent.ssh.on('tcp connection', (_details, accept) => {
    const channel: ClientChannel = accept();
    channel.on('data', (chunk: Buffer) => channel.write(chunk));
    channel.on('end', () => channel.end());
  });
}

interface Item {
  client_id: string;
  client_name: string;
  id: string;
  owner: string;
  open: boolean;
  active_connections: number;
  idle_close_at: string | null;
  close_at: string | null;
  lport: string;
  tunnel_url: string | null;
}

describe('GET /tunnels', () => {
  let t: GatewayServer;
  const agents: TestAgent[] = [];

  beforeAll(async () => {
    const base = await freePortBlock(4);
    t = await startGatewayServer({ server: { used_ports: [`${base}-${base + 3}`] } });
    for (const [id, name] of [
      ['tun-a', 'Alpha'],
      ['tun-b', 'Bravo'],
    ] as const) {
      const agent = await connectClient(t.agent('agents-a'), { client_id: id, name });
      serveTunnels(agent);
      agents.push(agent);
    }
  });
  afterAll(async () => {
    for (const agent of agents) await agent.close();
    await t?.stop();
  });

  const list = async (query = '') => {
    const res = await t.api.get(`/tunnels${query}`, { auth: AUTH });
    expect(res.status, res.text).toBe(200);
    return res.json as { data: Item[]; meta: { count: number } };
  };
  const open = async (clientId: string, query: string) => {
    const res = await t.api.request('PUT', `/clients/${clientId}/tunnels?${query}`, { auth: AUTH });
    expect(res.status, res.text).toBe(200);
    return res.json.data as { id: string; lport: string };
  };

  test('needs credentials; lists nothing before any tunnel', async () => {
    expect((await t.api.get('/tunnels')).status).toBe(401);
    expect(await list()).toEqual({ data: [], meta: { count: 0 } });
  });

  test('lists every tunnel with client, owner and timers; the idle timer stops while a connection is open', async () => {
    const before = Date.now();
    const a1 = await open('tun-a', 'remote=127.0.0.1:7&scheme=http&idle-timeout-minutes=5');
    await open('tun-a', 'remote=127.0.0.1:8&skip-idle-timeout=true&auto-close=2h&acl=127.0.0.1');
    await open('tun-b', 'remote=127.0.0.1:9');
    const all = await list();
    expect(all.meta.count).toBe(3);
    expect(all.data.map((i) => `${i.client_id}/${i.id}`)).toEqual(['tun-a/1', 'tun-a/2', 'tun-b/1']);
    const [first, second, third] = all.data;
    expect(first).toMatchObject({
      client_name: 'Alpha',
      owner: 'admin',
      open: true,
      active_connections: 0,
      close_at: null,
      tunnel_url: expect.stringMatching(/^http:\/\/.+:\d+$/),
    });
    const idleAt = Date.parse(first!.idle_close_at ?? '');
    expect(idleAt).toBeGreaterThanOrEqual(before + 5 * 60_000);
    expect(idleAt).toBeLessThanOrEqual(Date.now() + 5 * 60_000);
    expect(second).toMatchObject({ idle_close_at: null, acl: '127.0.0.1' });
    expect(Date.parse(second!.close_at ?? '')).toBeGreaterThanOrEqual(before + 2 * 3600_000);
    expect(third).toMatchObject({ client_id: 'tun-b', client_name: 'Bravo' });

    const socket = connect({ host: '127.0.0.1', port: Number(a1.lport) });
    await once(socket, 'connect');
    socket.write('ping');
    await once(socket, 'data');
    const busy = await waitFor(
      async () =>
        (await list('?filter[client_id]=tun-a&sort=id')).data.find(
          (i) => i.id === '1' && i.active_connections === 1,
        ),
      5000,
      'the connection counted',
    );
    expect(busy.idle_close_at).toBeNull();
    socket.end();
    await waitFor(
      async () =>
        (await list('?filter[client_id]=tun-a')).data.find((i) => i.id === '1' && i.idle_close_at !== null),
      5000,
      'the idle timer running again',
    );
  });

  test('filters, sorts, pages and picks fields; a closed tunnel leaves the list', async () => {
    const bravo = await list('?filter[client_name]=brav*');
    expect(bravo.data.map((i) => i.client_id)).toEqual(['tun-b']);
    const paged = await list(
      '?sort=-client_id,-id&page[limit]=2&page[offset]=1&fields[tunnels]=client_id,id',
    );
    expect(paged).toEqual({
      data: [
        { client_id: 'tun-a', id: '2' },
        { client_id: 'tun-a', id: '1' },
      ],
      meta: { count: 3 },
    });
    for (const bad of ['?sort=acl', '?filter[nope]=1', '?page[limit]=0', '?fields[tunnels]=secret']) {
      const res = await t.api.get(`/tunnels${bad}`, { auth: AUTH });
      expect(res.status, bad).toBe(400);
    }
    expect((await t.api.delete('/clients/tun-a/tunnels/2', { auth: AUTH })).status).toBe(204);
    expect((await list()).data.map((i) => `${i.client_id}/${i.id}`)).toEqual(['tun-a/1', 'tun-b/1']);
  });
});
