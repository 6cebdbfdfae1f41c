import { PERMISSIONS } from '@svc/protocol';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { WebSocket } from 'ws';
import { basicHeader } from '../../../../test-support/api-client.js';
import { ALL_ENGINES } from '../../../../test-support/databases.js';
import { ADMIN, startTestServer, type SeedUser, type TestServer } from '../../../../test-support/server.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { waitFor } from '../gateway/helpers.js';
import { startJobAgent, type JobAgent } from './job-agents.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary JSON
type Json = any;

const user = (username: string, groups: string[]): SeedUser => ({
  username,
  password: `${username}-secret-1`,
  groups,
});
/** Scoped to client group `web`, commands and tunnels restricted. */
const ALICE = user('alice', ['web-ops']);
/** In two scoped groups: sees the union. */
const BOB = user('bob', ['web-ops', 'db-ops']);
/** Also in a group without a row: not scoped, not restricted by allow lists. */
const CAROL = user('carol', ['web-ops', 'everyone']);
/** The clock schedules are created and fired by; the test moves it and ticks. */
const clock = { at: Date.parse('2030-03-04T10:00:30Z'), now: () => new Date(clock.at) };
const as = (u: SeedUser) => ({ auth: { basic: [u.username, u.password] as [string, string] } });
const ADMIN_AUTH = as(ADMIN);

describe.each(ALL_ENGINES)('client scope and restrictions of user groups on %s', (engine) => {
  let t: TestServer;
  let database: Database;
  let agents: JobAgent[] = [];

  beforeAll(async () => {
    t = await startTestServer({
      store: `database:${engine}`,
      users: [ADMIN, ALICE, BOB, CAROL],
      api: { group_details_table: 'group_details' },
      clientAuth: { source: 'static', entries: { 'agents-a': 'secret-a-123' } },
      tuning: { scheduleClock: clock },
    });
    const agentOptions = () => ({
      url: `ws://127.0.0.1:${t.server.clientPort}`,
      authId: 'agents-a',
      password: 'secret-a-123',
      fingerprint: t.server.fingerprint,
    });
    for (const [id, tags] of [
      ['web-1', ['web']],
      ['web-2', ['web']],
      ['db-1', ['db']],
    ] as const)
      agents.push(await startJobAgent({ agent: agentOptions }, id, { tags: [...tags] }));
    for (const id of ['web', 'db']) {
      const res = await t.api.post(
        '/client-groups',
        { id, description: '', params: { tag: [id] } },
        ADMIN_AUTH,
      );
      expect(res.status).toBe(201);
    }
    database = await openDatabase(t.config.database, { dataDir: t.dataDir });
    // Through PUT /user-groups, as an operator would: every permission (issue 28 §1), then the scope and rules.
    const everything = Object.fromEntries(PERMISSIONS.map((p) => [p, true]));
    const groups: Array<[string, Record<string, unknown>]> = [
      [
        'web-ops',
        {
          client_groups: ['web'],
          commands_restricted: { allow: ['^uptime', '^df'], deny: ['-h'] },
          tunnels_restricted: { allow: { scheme: ['ssh'], remote: [22] }, deny: { acl: ['192.0.2.0/24'] } },
        },
      ],
      ['db-ops', { client_groups: ['db'] }],
      ['everyone', {}],
    ];
    for (const [name, policy] of groups) {
      const res = await t.api.put(`/user-groups/${name}`, { permissions: everything, ...policy }, ADMIN_AUTH);
      expect(res.status, res.text).toBe(200);
    }
  });
  afterAll(async () => {
    for (const a of agents) await a.agent.close();
    agents = [];
    await database?.close();
    await t?.stop();
  });

  const ids = async (u: SeedUser, query = ''): Promise<string[]> => {
    const res = await t.api.get(`/clients${query}`, as(u));
    expect(res.status).toBe(200);
    expect(res.json.meta.count).toBe(res.json.data.length);
    return (res.json.data as { id: string }[]).map((c) => c.id);
  };
  const runs = () => agents.reduce((n, a) => n + a.runs.length, 0);

  test('GET /clients lists the union of the scoped groups; other clients answer 404', async () => {
    expect(await ids(ADMIN)).toEqual(['db-1', 'web-1', 'web-2']);
    expect(await ids(ALICE)).toEqual(['web-1', 'web-2']);
    expect(await ids(ALICE, '?sort=-id')).toEqual(['web-2', 'web-1']);
    expect(await ids(ALICE, '?sort=-name')).toEqual(['web-2', 'web-1']);
    expect(await ids(ALICE, '?filter[tags]=db')).toEqual([]);
    expect(await ids(BOB)).toEqual(['db-1', 'web-1', 'web-2']);
    expect(await ids(CAROL)).toEqual(['db-1', 'web-1', 'web-2']);

    expect((await t.api.get('/clients/web-1', as(ALICE))).status).toBe(200);
    const hidden = await t.api.get('/clients/db-1', as(ALICE));
    expect(hidden.status).toBe(404);
    expect(hidden.json.errors[0].code).toBe('ERR_CLIENT_NOT_FOUND');
    expect((await t.api.get('/clients/db-1/commands', as(ALICE))).status).toBe(404);
    expect((await t.api.request('DELETE', '/clients/db-1', as(ALICE))).status).toBe(404);
  });

  test('a multi-client run touching a client outside the scope is refused whole, naming it', async () => {
    const before = runs();
    for (const targeting of [
      { client_ids: ['web-1', 'db-1'] },
      { group_ids: ['web', 'db'] },
      { tags: { operator: 'OR', tags: ['web', 'db'] } },
    ]) {
      const res = await t.api.post('/commands', { command: 'uptime', ...targeting }, as(ALICE));
      expect(res.status, JSON.stringify(targeting)).toBe(403);
      expect(res.json.errors[0]).toMatchObject({
        code: 'ERR_CLIENTS_OUT_OF_SCOPE',
        title: 'The run targets 1 client(s) outside your client scope: db-1',
      });
    }
    expect(runs()).toBe(before);
    const listed = await t.api.get('/commands', as(ADMIN));
    expect(listed.json.meta.count).toBe(0);

    const ok = await t.api.post('/commands', { command: 'uptime', group_ids: ['web'] }, as(ALICE));
    expect(ok.status).toBe(200);
    await waitFor(() => runs() === before + 2, 10_000, 'both web clients to run uptime');
    // A run inside the scope whose command is not allowed is refused too.
    const denied = await t.api.post('/commands', { command: 'uptime -h', client_ids: ['web-1'] }, as(ALICE));
    expect(denied.status).toBe(403);
    expect(denied.json.errors[0].code).toBe('ERR_COMMAND_RESTRICTED');
    // Bob's groups cover db too.
    const union = await t.api.post(
      '/commands',
      { command: 'hostname', client_ids: ['web-1', 'db-1'] },
      as(BOB),
    );
    expect(union.status).toBe(200);
    await waitFor(() => runs() === before + 4, 10_000, 'bob’s run');
  });

  test('the WebSocket run is checked as POST /commands', async () => {
    const before = runs();
    const url = `${t.server.apiUrl?.replace(/^http/, 'ws')}/ws/commands`;
    const ws = new WebSocket(url, {
      headers: { authorization: basicHeader(ALICE.username, ALICE.password) },
    });
    const answer = new Promise<Json>((resolve, reject) => {
      ws.once('message', (data) => resolve(JSON.parse((data as Buffer).toString('utf8'))));
      ws.once('error', reject);
    });
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send(JSON.stringify({ command: 'uptime', client_ids: ['web-2', 'db-1'], timeout_sec: 5 }));
    expect((await answer).errors[0]).toMatchObject({ code: 'ERR_CLIENTS_OUT_OF_SCOPE' });
    ws.close();
    expect(runs()).toBe(before);
  });

  test('commands: allow list, deny wins; scripts refused under an allow list; the scope first', async () => {
    const before = runs();
    const run = (u: SeedUser, client: string, command: string) =>
      t.api.post(`/clients/${client}/commands`, { command }, as(u));
    expect((await run(ALICE, 'db-1', 'uptime')).status).toBe(404);
    const notAllowed = await run(ALICE, 'web-1', 'cat /etc/shadow');
    expect(notAllowed.status).toBe(403);
    expect(notAllowed.json.errors[0]).toMatchObject({
      code: 'ERR_COMMAND_RESTRICTED',
      title: 'Command refused: it matches no allow rule of your user groups',
    });
    const denied = await run(ALICE, 'web-1', 'df -h');
    expect(denied.status).toBe(403);
    expect(denied.json.errors[0].title).toBe(
      `Command refused by user group 'web-ops': the command matches deny rule "-h"`,
    );
    const script = await t.api.post(
      '/clients/web-1/scripts',
      { script: Buffer.from('df\n').toString('base64') },
      as(ALICE),
    );
    expect(script.status).toBe(403);
    expect(runs()).toBe(before);

    expect((await run(ALICE, 'web-1', 'df')).status).toBe(200);
    // Carol's other group has no allow list, so she may run anything but what a deny rule names.
    expect((await run(CAROL, 'db-1', 'cat /etc/hostname')).status).toBe(200);
    expect((await run(CAROL, 'db-1', 'ls -h')).status).toBe(403);
    await waitFor(() => runs() === before + 2, 10_000, 'the allowed commands to run');
  });

  test("a schedule's firing is checked against its creator's scope and restrictions", async () => {
    const before = runs();
    const schedule = async (body: Record<string, unknown>): Promise<string> => {
      const res = await t.api.post(
        '/schedules',
        { name: `s-${Math.random()}`, schedule: '* * * * *', type: 'command', ...body },
        as(ALICE),
      );
      expect(res.status, res.text).toBe(201);
      return String(res.json.data.id);
    };
    // Targets outside the scope are refused when the schedule is saved (client-scope-reads.test.ts has more).
    const outside = await t.api.post(
      '/schedules',
      { name: 'outside', schedule: '* * * * *', type: 'command', command: 'uptime', client_ids: ['db-1'] },
      as(ALICE),
    );
    expect([outside.status, outside.json.errors[0].code]).toEqual([403, 'ERR_CLIENTS_OUT_OF_SCOPE']);
    const denied = await schedule({ command: 'uptime -h', client_ids: ['web-1'] });
    clock.at += 60_000;
    await t.server.tickSchedules();
    const last = async (id: string): Promise<Json> =>
      (await t.api.get(`/schedules/${id}/runs`, as(ALICE))).json.data[0];
    expect((await last(denied)).outcome).toBe('failed');
    expect((await last(denied)).reason).toMatch(/deny rule "-h"/);
    expect(runs()).toBe(before);
    expect((await t.api.request('DELETE', `/schedules/${denied}`, as(ALICE))).status).toBe(204);
  });

  test('tunnels: allow and deny rules, 403 naming the rule; 404 outside the scope', async () => {
    const open = (client: string, query: string) =>
      t.api.request('PUT', `/clients/${client}/tunnels?${query}`, as(ALICE));
    expect((await open('db-1', 'remote=22&scheme=ssh&acl=10.0.0.1')).status).toBe(404);
    const rdp = await open('web-1', 'remote=3389&scheme=rdp&acl=10.0.0.1');
    expect(rdp.status).toBe(403);
    expect(rdp.json.errors[0]).toMatchObject({
      code: 'ERR_TUNNEL_RESTRICTED',
      title: 'Tunnel refused: no allow rule of your user groups covers it (tunnels_restricted.allow)',
    });
    const denied = await open('web-1', 'remote=22&scheme=ssh&acl=192.0.2.7');
    expect(denied.status).toBe(403);
    expect(denied.json.errors[0].title).toBe(
      `Tunnel refused by user group 'web-ops': tunnels_restricted.deny.acl "192.0.2.0/24"`,
    );
    const anyone = await open('web-1', 'remote=22&scheme=ssh');
    expect(anyone.json.errors[0].title).toMatch(/deny\.acl .*the tunnel has no acl/);
  });
});
