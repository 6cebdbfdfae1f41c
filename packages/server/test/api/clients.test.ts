import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { connectClient, type TestAgent } from '../../../../test-support/agent-client.js';
import { AUTH, clientRecord, startGatewayServer, waitFor, type GatewayServer } from '../gateway/helpers.js';

const ids = (res: { json: { data: { id: string }[] } }) => res.json.data.map((c) => c.id);

describe('the clients API', () => {
  let t: GatewayServer;
  const agents: TestAgent[] = [];

  beforeAll(async () => {
    t = await startGatewayServer();
    const connect = async (authId: 'agents-a' | 'agents-b', hello: Parameters<typeof connectClient>[1]) => {
      const agent = await connectClient(t.agent(authId), hello);
      agents.push(agent);
      return agent;
    };
    await connect('agents-a', {
      client_id: 'web-1',
      name: 'Web One',
      tags: ['web', 'prod'],
      labels: { city: 'Cologne', team: 'ops' },
      facts: { hostname: 'web1.example.com', os_kernel: 'linux', ipv4: ['10.0.0.1'] },
    });
    await connect('agents-a', {
      client_id: 'Web-2',
      name: 'web two',
      tags: ['web'],
      labels: { city: 'Berlin' },
      facts: { hostname: 'web2.example.com', os_kernel: 'linux', ipv4: ['10.0.0.2'] },
    });
    await connect('agents-b', {
      client_id: 'db-1',
      name: 'Database',
      tags: ['db', 'prod'],
      labels: { city: 'Cologne' },
      facts: { hostname: 'db1.example.org', os_kernel: 'windows', ipv4: ['10.1.0.1'] },
    });
    const gone = await connect('agents-b', {
      client_id: 'old-box',
      name: 'Old box',
      facts: { hostname: 'old.example.org', os_kernel: 'linux', ipv4: [] },
    });
    await gone.close();
    await waitFor(async () => (await clientRecord(t, 'old-box'))?.connection_state === 'disconnected');
  });
  afterAll(async () => {
    await Promise.all(agents.map((a) => a.close()));
    await t?.stop();
  });

  test('every clients route needs credentials', async () => {
    for (const [method, path] of [
      ['GET', '/clients'],
      ['GET', '/clients/web-1'],
      ['DELETE', '/clients/old-box'],
    ] as const) {
      const res = await t.api.request(method, path);
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(res.json.errors[0].code).toBe('ERR_AUTH_REQUIRED');
    }
    const wrong = await t.api.get('/clients', { auth: { basic: ['admin', 'wrong-password'] } });
    expect(wrong.status).toBe(401);
  });

  test('lists full records sorted by id (case-insensitive) with meta.count', async () => {
    const res = await t.api.get('/clients', { auth: AUTH });
    expect(res.status).toBe(200);
    expect(ids(res)).toEqual(['db-1', 'old-box', 'web-1', 'Web-2']);
    expect(res.json.meta).toEqual({ count: 4 });
    expect(res.json.data[0]).toMatchObject({ id: 'db-1', hostname: 'db1.example.org', tunnels: [] });
  });

  test('filters on tags, labels, states, credentials, addresses and with wildcards, case-insensitively', async () => {
    const list = async (query: string) => {
      const res = await t.api.get(`/clients?${query}`, { auth: AUTH });
      expect(res.status, query).toBe(200);
      expect(res.json.meta.count).toBe(res.json.data.length);
      return ids(res);
    };
    expect(await list('filter[tags]=prod')).toEqual(['db-1', 'web-1']);
    expect(await list('filter[tags]=PROD&filter[tags]=web')).toEqual(['web-1']);
    expect(await list('filter[tags]=db,web')).toEqual(['db-1', 'web-1', 'Web-2']);
    expect(await list(`filter[labels]=${encodeURIComponent('city: cologne')}`)).toEqual(['db-1', 'web-1']);
    expect(await list(`filter[labels]=${encodeURIComponent('city:Ber*')}`)).toEqual(['Web-2']);
    expect(await list('filter[name]=web*')).toEqual(['web-1', 'Web-2']);
    expect(await list('filter[hostname]=*.example.org')).toEqual(['db-1', 'old-box']);
    expect(await list('filter[ipv4]=10.0.*')).toEqual(['web-1', 'Web-2']);
    expect(await list('filter[connection_state]=disconnected')).toEqual(['old-box']);
    expect(await list('filter[client_auth_id]=agents-b')).toEqual(['db-1', 'old-box']);
    expect(await list('filter[os_kernel]=windows')).toEqual(['db-1']);
    expect(await list('filter[address]=127.0.0.x:*')).toHaveLength(4);
    expect(await list('filter[name|hostname]=db*')).toEqual(['db-1']);
    expect(await list('filter[*]=cologne')).toEqual([]); // labels match as "key: value"
    expect(await list('filter[tags]=none-such')).toEqual([]);
  });

  test('sorts by name, hostname and connection state, ties by id', async () => {
    const sorted = async (sort: string) => ids(await t.api.get(`/clients?sort=${sort}`, { auth: AUTH }));
    expect(await sorted('name')).toEqual(['db-1', 'old-box', 'web-1', 'Web-2']);
    expect(await sorted('-hostname')).toEqual(['Web-2', 'web-1', 'old-box', 'db-1']);
    expect(await sorted('-id')).toEqual(['Web-2', 'web-1', 'old-box', 'db-1']);
    expect(await sorted('connection_state')).toEqual(['db-1', 'web-1', 'Web-2', 'old-box']);
    expect(await sorted('-connection_state')).toEqual(['old-box', 'db-1', 'web-1', 'Web-2']);
  });

  test('paginates with page[limit] and page[offset]; count is before pagination', async () => {
    const res = await t.api.get('/clients?page[limit]=2&page[offset]=1', { auth: AUTH });
    expect(ids(res)).toEqual(['old-box', 'web-1']);
    expect(res.json.meta.count).toBe(4);
    const past = await t.api.get('/clients?page[offset]=10', { auth: AUTH });
    expect(past.json).toEqual({ data: [], meta: { count: 4 } });
  });

  test('fields[clients] keeps only the listed fields, also on one client', async () => {
    const res = await t.api.get('/clients?fields[clients]=id,labels&filter[tags]=prod', { auth: AUTH });
    expect(res.json.data).toEqual([
      { id: 'db-1', labels: { city: 'Cologne' } },
      { id: 'web-1', labels: { city: 'Cologne', team: 'ops' } },
    ]);
    const one = await t.api.get('/clients/web-1?fields[clients]=id,connection_state', { auth: AUTH });
    expect(one.json).toEqual({ data: { id: 'web-1', connection_state: 'connected' } });
  });

  test('bad list parameters are a 400 naming the problem', async () => {
    for (const [query, title] of [
      ['sort=address', "unsupported sort field 'address'"],
      ['page[limit]=501', 'page[limit] must be between 1 and 500'],
      ['page[limit]=0', 'page[limit] must be between 1 and 500'],
      ['filter[password]=x', "unsupported filter field 'password'"],
      ['fields[clients]=secret', "unsupported field 'secret' in fields[clients]"],
      ['fields[users]=id', 'unsupported resource in fields[users]'],
    ]) {
      const res = await t.api.get(`/clients?${query}`, { auth: AUTH });
      expect(res.status, query).toBe(400);
      expect(res.json.errors[0].code).toBe('ERR_INVALID_QUERY');
      expect(res.json.errors[0].title).toContain(title);
    }
    const one = await t.api.get('/clients/web-1?sort=id', { auth: AUTH });
    expect(one.status).toBe(400);
  });

  test('GET of an unknown client is a 404', async () => {
    const res = await t.api.get('/clients/no-such', { auth: AUTH });
    expect(res.status).toBe(404);
    expect(res.json.errors[0]).toMatchObject({
      code: 'ERR_CLIENT_NOT_FOUND',
      title: "Client 'no-such' not found",
    });
  });

  test('DELETE: 409 for a connected client, 204 for a disconnected one, then 404', async () => {
    const connected = await t.api.delete('/clients/web-1', { auth: AUTH });
    expect(connected.status).toBe(409);
    expect(connected.json.errors[0].code).toBe('ERR_CLIENT_CONNECTED');

    const deleted = await t.api.delete('/clients/old-box', { auth: AUTH });
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await t.api.get('/clients/old-box', { auth: AUTH })).status).toBe(404);
    const again = await t.api.delete('/clients/old-box', { auth: AUTH });
    expect(again.status).toBe(404);
    expect(again.json.errors[0].code).toBe('ERR_CLIENT_NOT_FOUND');

    const status = await t.api.get('/status', { auth: AUTH });
    expect(status.json.data).toMatchObject({ clients_connected: 3, clients_disconnected: 0 });
    await t.restart(); // the delete reached the database
    await Promise.all(agents.map((a) => a.closed));
    agents.length = 0;
    expect(ids(await t.api.get('/clients', { auth: AUTH }))).toEqual(['db-1', 'web-1', 'Web-2']);
  });
});
