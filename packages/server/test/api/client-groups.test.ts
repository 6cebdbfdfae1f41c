import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { connectClient, type TestAgent } from '../../../../test-support/agent-client.js';
import { TEST_FACTS } from '../../../../test-support/facts.js';
import { AUTH, clientRecord, startGatewayServer, waitFor, type GatewayServer } from '../gateway/helpers.js';

const NULL_PARAMS = {
  client_id: null,
  name: null,
  os: null,
  os_arch: null,
  os_family: null,
  os_kernel: null,
  hostname: null,
  ipv4: null,
  ipv6: null,
  tag: null,
  version: null,
  address: null,
  client_auth_id: null,
  labels: null,
};

describe.each(['sqlite', 'postgres'] as const)('/client-groups on %s', (engine) => {
  let t: GatewayServer;
  const agents = new Map<string, TestAgent>();

  const connect = async (
    id: string,
    hello: Parameters<typeof connectClient>[1],
    auth = 'agents-a' as const,
  ) => {
    const agent = await connectClient(t.agent(auth), { client_id: id, ...hello });
    agents.set(id, agent);
    return agent;
  };
  const members = async (id: string): Promise<string[]> => {
    const res = await t.api.get(`/client-groups/${id}`, { auth: AUTH });
    expect(res.status).toBe(200);
    return res.json.data.client_ids as string[];
  };
  const create = async (id: string, params: Record<string, unknown>, description = ''): Promise<void> => {
    const res = await t.api.post('/client-groups', { id, description, params }, { auth: AUTH });
    expect(res.status, JSON.stringify(res.json)).toBe(201);
  };

  beforeAll(async () => {
    t = await startGatewayServer({ engine });
    await connect('web-1', {
      name: 'Web One',
      tags: ['web', 'prod'],
      labels: { city: 'Cologne', team: 'ops' },
      facts: { hostname: 'web1.example.com', os_kernel: 'linux', ipv4: ['10.0.0.1'] },
    });
    await connect('Web-2', {
      name: 'web two',
      tags: ['web'],
      labels: { city: 'Berlin' },
      facts: { hostname: 'web2.example.com', os_kernel: 'linux', ipv4: ['10.0.0.2'] },
    });
    await connect(
      'db-1',
      {
        name: 'Database',
        tags: ['db', 'prod'],
        labels: { city: 'Cologne' },
        facts: { hostname: 'db1.example.org', os_kernel: 'windows', ipv4: ['10.1.0.1'] },
      },
      'agents-b' as 'agents-a',
    );
  });
  afterAll(async () => {
    await Promise.all([...agents.values()].map((a) => a.close()));
    await t?.stop();
  });

  test('every route needs credentials', async () => {
    for (const [method, path] of [
      ['GET', '/client-groups'],
      ['POST', '/client-groups'],
      ['GET', '/client-groups/x'],
      ['PUT', '/client-groups/x'],
      ['DELETE', '/client-groups/x'],
      ['POST', '/client-groups-preview'],
    ] as const) {
      const body = method === 'POST' || method === 'PUT' ? { body: { id: 'x' } } : {};
      const res = await t.api.request(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(res.json.errors[0].code).toBe('ERR_AUTH_REQUIRED');
    }
  });

  test('create answers 201 with the group, unset params as null and the members', async () => {
    const created = await t.api.post(
      '/client-groups',
      { id: 'prod', description: 'Production', params: { tag: ['PROD'] } },
      { auth: AUTH },
    );
    expect(created.status).toBe(201);
    expect(created.json).toEqual({
      data: {
        id: 'prod',
        description: 'Production',
        params: { ...NULL_PARAMS, tag: ['PROD'] },
        client_ids: ['db-1', 'web-1'],
        num_clients: 2,
        num_clients_connected: 2,
      },
    });
    const read = await t.api.get('/client-groups/prod', { auth: AUTH });
    expect(read.json).toEqual(created.json);
    const sparse = await t.api.get('/client-groups/prod?fields[client_groups]=id,client_ids', { auth: AUTH });
    expect(sparse.json).toEqual({ data: { id: 'prod', client_ids: ['db-1', 'web-1'] } });
  });

  test('a duplicate id is 409; bad ids, unknown params and bad values are 400 naming what to fix', async () => {
    await create('dup', { tag: ['x'] });
    const again = await t.api.post('/client-groups', { id: 'dup', params: {} }, { auth: AUTH });
    expect(again.status).toBe(409);
    expect(again.json.errors[0].code).toBe('ERR_CLIENT_GROUP_EXISTS');

    const bad = async (body: unknown, expected: string) => {
      const res = await t.api.post('/client-groups', body, { auth: AUTH });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.errors[0].code).toBe('ERR_INVALID_REQUEST');
      expect(res.json.errors.map((e: { title: string }) => e.title).join(' | ')).toContain(expected);
    };
    await bad({ id: 'a.b', params: {} }, 'id: may contain only');
    await bad({ id: '', params: {} }, 'id: must not be empty');
    await bad({ id: 'x'.repeat(101), params: {} }, 'id: must be at most 100');
    await bad({ params: {} }, 'id');
    // The clients' field is `tags`, the group param `tag` (as in OpenRPort): the answer names it.
    await bad(
      { id: 'g', params: { tags: ['web'] } },
      `unknown field 'tags' in params; did you mean "tag" for "tags"?`,
    );
    await bad(
      { id: 'g', params: { Hostname: ['a'], os_famly: ['b'] } },
      `unknown field 'Hostname', 'os_famly' in params; did you mean "hostname" for "Hostname", "os_family" for "os_famly"?`,
    );
    await bad({ id: 'g', params: { colour: ['red'] } }, "unknown field 'colour' in params; remove it");
    await bad(
      { id: 'g', params: { tag: { and: ['a'], or: ['b'] } } },
      'params.tag: must be null, a list of strings',
    );
    await bad({ id: 'g', params: { labels: ['city'] } }, 'params.labels.0: must have the form key:value');
    await bad({ id: 'g', params: { label: ['*:x'] } }, 'label value only');
    await bad({ id: 'g', params: {}, allowed_user_groups: [] }, "unknown field 'allowed_user_groups'");
    const missing = await t.api.request('POST', '/client-groups', { auth: AUTH });
    expect(missing.status).toBe(400);
  });

  test('PUT replaces description and every param; id must match the path; unknown groups are 404', async () => {
    await create('replace', { tag: ['web'], os_kernel: ['linux'] }, 'before');
    const put = await t.api.put(
      '/client-groups/replace',
      { description: 'after', params: { label: ['city:Cologne'] } },
      { auth: AUTH },
    );
    expect(put.status).toBe(200);
    expect(put.json.data).toMatchObject({
      id: 'replace',
      description: 'after',
      params: { ...NULL_PARAMS, labels: ['city:Cologne'] },
      client_ids: ['db-1', 'web-1'],
    });
    const withId = await t.api.put('/client-groups/replace', { id: 'replace', params: {} }, { auth: AUTH });
    expect(withId.json.data).toMatchObject({ description: '', params: NULL_PARAMS, client_ids: [] });
    const renamed = await t.api.put('/client-groups/replace', { id: 'other', params: {} }, { auth: AUTH });
    expect(renamed.status).toBe(400);
    expect(renamed.json.errors[0].title).toContain("differs from the group id 'replace'");
    const unknown = await t.api.put('/client-groups/nope', { params: {} }, { auth: AUTH });
    expect(unknown.status).toBe(404);
    expect(unknown.json.errors[0].code).toBe('ERR_CLIENT_GROUP_NOT_FOUND');
  });

  test('DELETE answers 204, then the group is gone (404 for GET, PUT and DELETE)', async () => {
    await create('short-lived', { tag: ['web'] });
    expect((await t.api.delete('/client-groups/short-lived', { auth: AUTH })).status).toBe(204);
    for (const method of ['GET', 'DELETE'] as const) {
      const res = await t.api.request(method, '/client-groups/short-lived', { auth: AUTH });
      expect(res.status).toBe(404);
      expect(res.json.errors[0].code).toBe('ERR_CLIENT_GROUP_NOT_FOUND');
    }
  });

  test('lists whole groups sorted by id with meta.count, filters, sorts, fields and pages (default 50, max 500)', async () => {
    const bulk = Array.from({ length: 55 }, (_, i) => `bulk-${String(i).padStart(2, '0')}`);
    for (const [i, id] of bulk.entries()) {
      const params = { ...NULL_PARAMS, client_id: ['db-*'] };
      await t.server.clientGroups.create({ id, description: `bulk ${i}`, params });
    }
    const first = await t.api.get('/client-groups?filter[id]=bulk-*', { auth: AUTH });
    expect(first.status).toBe(200);
    expect(first.json.meta).toEqual({ count: 55 });
    expect(first.json.data).toHaveLength(50);
    expect(first.json.data[0]).toEqual({
      id: 'bulk-00',
      description: 'bulk 0',
      params: { ...NULL_PARAMS, client_id: ['db-*'] },
      client_ids: ['db-1'],
      num_clients: 1,
      num_clients_connected: 1,
    });
    const page = await t.api.get(
      '/client-groups?filter[description]=BULK*&sort=-id&page[limit]=2&page[offset]=1&fields[client_groups]=id',
      { auth: AUTH },
    );
    expect(page.json).toEqual({ data: [{ id: 'bulk-53' }, { id: 'bulk-52' }], meta: { count: 55 } });
    const tooMany = await t.api.get('/client-groups?page[limit]=501&sort=params', { auth: AUTH });
    expect(tooMany.status).toBe(400);
    expect(tooMany.json.errors).toHaveLength(2);
    for (const id of bulk) await t.server.clientGroups.delete(id);
  });

  test('every rule on live clients: wildcards, and/or, labels with blanks, multi-valued fields, all params', async () => {
    const cases: [string, Record<string, unknown>, string[]][] = [
      ['r-wild-end', { name: ['web*'] }, ['web-1', 'Web-2']],
      ['r-wild-start', { hostname: ['*.example.org'] }, ['db-1']],
      ['r-wild-mid', { hostname: ['web*.com'] }, ['web-1', 'Web-2']],
      ['r-case', { client_id: ['WEB-2'] }, ['Web-2']],
      ['r-all', { tag: ['web'], os_kernel: ['linux'], ipv4: ['10.0.0.1'] }, ['web-1']],
      ['r-multi', { ipv4: ['10.1.*', '10.0.0.2'] }, ['db-1', 'Web-2']],
      ['r-and', { tag: { and: ['web', 'prod'] } }, ['web-1']],
      ['r-or', { tag: { or: ['db', 'nothing'] } }, ['db-1']],
      ['r-label', { labels: ['city : cologne', 'team:*'] }, ['db-1', 'web-1']],
      ['r-label-and', { label: { and: ['city:Col*', 'team: OPS'] } }, ['web-1']],
      ['r-auth', { client_auth_id: ['agents-b'] }, ['db-1']],
      ['r-none', {}, []],
    ];
    for (const [id, params] of cases) await create(id, params);
    for (const [id, , expected] of cases) expect(await members(id), id).toEqual(expected);
    expect(await t.server.clientGroups.membersOf(['r-and', 'r-or', 'r-and', 'r-multi'])).toEqual([
      'db-1',
      'web-1',
      'Web-2',
    ]);
    await expect(t.server.clientGroups.membersOf(['r-and', 'no-such-group'])).rejects.toMatchObject({
      kind: 'not_found',
      code: 'ERR_CLIENT_GROUP_NOT_FOUND',
      message: "Client group 'no-such-group' not found",
    });
    expect(await t.server.clientGroups.membersOf([])).toEqual([]);
  });

  test('preview lists the clients unsaved params would hold, counted, without creating a group', async () => {
    const preview = async (params: unknown) => {
      const res = await t.api.post('/client-groups-preview', { params }, { auth: AUTH });
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      return res.json.data as {
        num_clients: number;
        num_clients_connected: number;
        clients: { id: string }[];
      };
    };
    const web = await preview({ tag: ['WEB'] });
    expect(web.num_clients).toBe(2);
    expect(web.num_clients_connected).toBe(2);
    expect(web.clients).toEqual([
      { id: 'web-1', name: 'Web One', hostname: 'web1.example.com', connection_state: 'connected' },
      { id: 'Web-2', name: 'web two', hostname: 'web2.example.com', connection_state: 'connected' },
    ]);
    expect((await preview({ tag: { and: ['web', 'prod'] } })).clients.map((c) => c.id)).toEqual(['web-1']);
    expect((await preview({ label: ['city: cologne'] })).clients.map((c) => c.id)).toEqual(['db-1', 'web-1']);
    expect((await preview({ hostname: ['*.example.org'], tag: ['web'] })).num_clients).toBe(0);
    expect(await preview({})).toEqual({ num_clients: 0, num_clients_connected: 0, clients: [] });
    const listed = await t.api.get('/client-groups?filter[id]=preview*', { auth: AUTH });
    expect(listed.json.meta.count).toBe(0);

    for (const body of [{}, { params: { tags: ['web'] } }, { params: { labels: ['nocolon'] } }, 'text']) {
      const res = await t.api.post('/client-groups-preview', body, { auth: AUTH });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.errors[0].code).toBe('ERR_INVALID_REQUEST');
    }
  });

  test('membership follows live client data: changed tags move a client in and out; disconnected members stay', async () => {
    await create('live-db', { tag: ['db'] });
    expect(await members('live-db')).toEqual(['db-1']);
    const web2 = agents.get('Web-2');
    web2?.peer.notify('facts.update', {
      tags: ['web', 'DB'],
      labels: { city: 'Berlin' },
      facts: { ...TEST_FACTS, hostname: 'web2.example.com', ipv4: ['10.0.0.2'] },
    });
    await waitFor(async () => (await members('live-db')).includes('Web-2'), 10_000, 'Web-2 to join');
    expect(await members('live-db')).toEqual(['db-1', 'Web-2']);
    web2?.peer.notify('facts.update', {
      tags: ['web'],
      labels: { city: 'Berlin' },
      facts: { ...TEST_FACTS, hostname: 'web2.example.com', ipv4: ['10.0.0.2'] },
    });
    await waitFor(async () => !(await members('live-db')).includes('Web-2'), 10_000, 'Web-2 to leave');

    const gone = await connect('gone-db', { tags: ['db'] });
    await waitFor(async () => (await members('live-db')).includes('gone-db'));
    await gone.close();
    await waitFor(async () => (await clientRecord(t, 'gone-db'))?.connection_state === 'disconnected');
    const res = await t.api.get('/client-groups/live-db', { auth: AUTH });
    expect(res.json.data).toMatchObject({
      client_ids: ['db-1', 'gone-db'],
      num_clients: 2,
      num_clients_connected: 1,
    });
    expect((await t.api.delete('/clients/gone-db', { auth: AUTH })).status).toBe(204);
    expect(await members('live-db')).toEqual(['db-1']);
  });

  test('GET /clients shows groups when asked and filters on them (wildcards too)', async () => {
    await create('f-web', { tag: ['web'] });
    await create('f-cologne', { labels: ['city:cologne'] });
    const listed = await t.api.get('/clients?fields[clients]=id,groups&filter[groups]=f-*', { auth: AUTH });
    expect(listed.status).toBe(200);
    const byId = Object.fromEntries(
      listed.json.data.map((c: { id: string; groups: string[] }) => [
        c.id,
        c.groups.filter((g) => g.startsWith('f-')),
      ]),
    );
    expect(byId).toEqual({ 'db-1': ['f-cologne'], 'web-1': ['f-cologne', 'f-web'], 'Web-2': ['f-web'] });
    const one = await t.api.get(
      '/clients?filter[groups]=F-WEB&filter[labels]=city:cologne&fields[clients]=id',
      {
        auth: AUTH,
      },
    );
    expect(one.json).toEqual({ data: [{ id: 'web-1' }], meta: { count: 1 } });
    const plain = await t.api.get('/clients?filter[id]=web-1', { auth: AUTH });
    expect(plain.json.data[0]).not.toHaveProperty('groups');
    const single = await t.api.get('/clients/web-1?fields[clients]=id,groups', { auth: AUTH });
    expect(single.json.data.groups).toEqual(expect.arrayContaining(['f-cologne', 'f-web']));
    // One client shows its groups without being asked, as OpenRPort does; fields[clients] can still leave them out.
    const whole = await t.api.get('/clients/Web-2', { auth: AUTH });
    expect(whole.json.data).toMatchObject({ id: 'Web-2', connection_state: expect.any(String) });
    expect(whole.json.data.groups.filter((g: string) => g.startsWith('f-'))).toEqual(['f-web']);
    const without = await t.api.get('/clients/Web-2?fields[clients]=id', { auth: AUTH });
    expect(without.json).toEqual({ data: { id: 'Web-2' } });
  });
});
