/**
 * Issue 28 §2 for reads: a user whose groups are limited to client groups sees only the runs, jobs and
 * schedules inside their scope (real svcd on SQLite, test agents); the others answer as unknown (404), and
 * schedules reaching clients outside it are refused when saved.
 */
import { PERMISSIONS } from '@svc/protocol';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { WebSocket } from 'ws';
import type { TestAgent } from '../../../../test-support/agent-client.js';
import { basicHeader } from '../../../../test-support/api-client.js';
import { freePortBlock } from '../../../../test-support/process.js';
import { ADMIN, startTestServer, type SeedUser, type TestServer } from '../../../../test-support/server.js';
import { waitFor } from '../gateway/helpers.js';
import { startJobAgent, type JobAgent } from './job-agents.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary JSON
type Json = any;

/** In `web-ops`, limited to the client group `web` (web-1, web-2). */
const ALICE: SeedUser = { username: 'alice', password: 'alice-secret-1', groups: ['web-ops'] };
const clock = { at: Date.parse('2031-05-06T08:00:30Z'), now: () => new Date(clock.at) };
const as = (u: SeedUser) => ({ auth: { basic: [u.username, u.password] as [string, string] } });
const ADMIN_AUTH = as(ADMIN);
const EVERY_PERMISSION = Object.fromEntries(PERMISSIONS.map((p) => [p, true]));

/** Lets svcd open tunnels to this agent: allowed, port open, the forward requested back; no data flows. */
function acceptTunnels(agent: TestAgent): void {
  agent.peer.on('tunnel.allowed', () => ({ allowed: true }));
  agent.peer.on('tunnel.check_port', () => ({ open: true }));
  agent.peer.on(
    'tunnel.open',
    ({ host, port }) =>
      new Promise<Record<string, never>>((resolve, reject) => {
        agent.ssh.forwardIn(host, port, (err) => (err ? reject(err) : resolve({})));
      }),
  );
  agent.peer.on('tunnel.close', () => ({}));
}

describe('what a scoped user reads of runs, jobs and schedules', () => {
  let t: TestServer;
  const agents: JobAgent[] = [];
  /** Admin's run on web-1 and db-1, admin's run on group web, Alice's run on web-2. */
  const run = { mixed: '', web: '', own: '' };

  /** The jid of a started run, once it has ended. */
  const ended = async (res: { status: number; text: string; json: Json }): Promise<string> => {
    expect(res.status, res.text).toBe(200);
    const jid = String(res.json.data.jid);
    await waitFor(
      async () => (await t.api.get(`/commands/${jid}`, ADMIN_AUTH)).json.data.status !== 'running',
      15_000,
      `run ${jid} to end`,
    );
    return jid;
  };
  const start = async (auth: typeof ADMIN_AUTH, body: Record<string, unknown>): Promise<string> =>
    ended(await t.api.post('/commands', { command: 'uptime', ...body }, auth));
  const listed = async (query = ''): Promise<{ jids: string[]; count: number }> => {
    const res = await t.api.get(`/commands${query}`, as(ALICE));
    expect(res.status, res.text).toBe(200);
    return { jids: (res.json.data as { jid: string }[]).map((r) => r.jid), count: res.json.meta.count };
  };
  const policy = async (clientGroups: string[]) => {
    const res = await t.api.put(
      '/user-groups/web-ops',
      { permissions: EVERY_PERMISSION, client_groups: clientGroups },
      ADMIN_AUTH,
    );
    expect(res.status, res.text).toBe(200);
  };

  beforeAll(async () => {
    const ports = await freePortBlock(2);
    t = await startTestServer({
      store: 'database:sqlite',
      server: { used_ports: [`${ports}-${ports + 1}`] },
      users: [ADMIN, ALICE],
      api: { group_details_table: 'group_details' },
      clientAuth: { source: 'static', entries: { 'agents-r': 'secret-r-123' } },
      tuning: { scheduleClock: clock },
    });
    const agent = () => ({
      url: `ws://127.0.0.1:${t.server.clientPort}`,
      authId: 'agents-r',
      password: 'secret-r-123',
      fingerprint: t.server.fingerprint,
    });
    for (const [id, tag] of [
      ['web-1', 'web'],
      ['web-2', 'web'],
      ['db-1', 'db'],
    ] as const)
      agents.push(await startJobAgent({ agent }, id, { tags: [tag] }));
    const groups = [
      { id: 'web', params: { tag: ['web'] } },
      { id: 'db', params: { tag: ['db'] } },
      { id: 'mixed', params: { client_id: ['web-1'] } },
    ];
    for (const group of groups)
      expect((await t.api.post('/client-groups', { description: '', ...group }, ADMIN_AUTH)).status).toBe(
        201,
      );
    await policy(['web']);
    run.mixed = await start(ADMIN_AUTH, { client_ids: ['web-1', 'db-1'] });
    run.web = await start(ADMIN_AUTH, { group_ids: ['web'] });
    run.own = await start(as(ALICE), { client_ids: ['web-2'] });
  });
  afterAll(async () => {
    for (const a of agents) await a.agent.close();
    await t?.stop();
  });

  test('GET /commands lists only the runs whose every target is in the scope, counted and paged so', async () => {
    const all = await t.api.get('/commands', ADMIN_AUTH);
    expect(all.json.meta.count).toBe(3);
    const mine = await listed();
    expect(mine.count).toBe(2);
    expect([...mine.jids].sort()).toEqual([run.web, run.own].sort());
    const first = await listed('?page[limit]=1');
    const second = await listed('?page[limit]=1&page[offset]=1');
    expect([first.count, second.count]).toEqual([2, 2]);
    expect([...first.jids, ...second.jids].sort()).toEqual([run.web, run.own].sort());
    expect(await listed('?filter[created_by]=admin')).toEqual({ jids: [run.web], count: 1 });
    expect(await listed('?page[offset]=5')).toEqual({ jids: [], count: 2 });
  });

  test('a run outside the scope answers 404 everywhere; one inside answers with its jobs', async () => {
    const unknown = (res: { status: number; json: Json }) => {
      expect(res.status).toBe(404);
      expect(res.json.errors[0].code).toBe('ERR_MULTI_JOB_NOT_FOUND');
    };
    unknown(await t.api.get(`/commands/${run.mixed}`, as(ALICE)));
    unknown(await t.api.get(`/commands/${run.mixed}/jobs`, as(ALICE)));
    unknown(await t.api.request('DELETE', `/commands/${run.mixed}`, as(ALICE)));
    unknown(await t.api.post(`/commands/${run.mixed}/rerun?only=all`, undefined, as(ALICE)));
    const csv = await fetch(`${t.server.apiUrl}/commands/${run.mixed}`, {
      headers: { accept: 'text/csv', authorization: basicHeader(ALICE.username, ALICE.password) },
    });
    expect(csv.status).toBe(404);

    const inside = await t.api.get(`/commands/${run.web}`, as(ALICE));
    expect(inside.status).toBe(200);
    const jobs = inside.json.data.jobs as { client_id: string }[];
    expect(jobs.map((j) => j.client_id).sort()).toEqual(['web-1', 'web-2']);
    const children = await t.api.get(`/commands/${run.web}/jobs`, as(ALICE));
    expect(children.json.meta.count).toBe(2);
    // The admin is not scoped.
    expect((await t.api.get(`/commands/${run.mixed}`, ADMIN_AUTH)).status).toBe(200);
  });

  test('the jobs of a client outside the scope answer 404 as the client does', async () => {
    const jobs = (await t.api.get(`/commands/${run.mixed}`, ADMIN_AUTH)).json.data.jobs as Json[];
    const onDb = jobs.find((j) => j.client_id === 'db-1');
    const onWeb = jobs.find((j) => j.client_id === 'web-1');
    for (const path of ['/clients/db-1/commands', `/clients/db-1/commands/${onDb.jid}`]) {
      const res = await t.api.get(path, as(ALICE));
      expect([res.status, res.json.errors[0].code], path).toEqual([404, 'ERR_CLIENT_NOT_FOUND']);
    }
    expect((await t.api.get(`/clients/web-1/commands/${onWeb.jid}`, as(ALICE))).status).toBe(200);
    expect((await t.api.get(`/clients/db-1/commands/${onDb.jid}`, ADMIN_AUTH)).status).toBe(200);
  });

  test('the follow socket refuses a run or job outside the scope and follows one inside', async () => {
    const follow = (jid: string) =>
      new Promise<Json[]>((resolve, reject) => {
        const messages: Json[] = [];
        const ws = new WebSocket(`${t.server.apiUrl?.replace(/^http/, 'ws')}/ws/commands/${jid}`, {
          headers: { authorization: basicHeader(ALICE.username, ALICE.password) },
        });
        ws.on('message', (data) => messages.push(JSON.parse((data as Buffer).toString('utf8'))));
        ws.once('error', reject);
        ws.once('close', () => resolve(messages));
      });
    const onDb = ((await t.api.get(`/commands/${run.mixed}`, ADMIN_AUTH)).json.data.jobs as Json[]).find(
      (j) => j.client_id === 'db-1',
    );
    for (const jid of [run.mixed, onDb.jid]) {
      const [answer] = await follow(jid);
      expect(answer.errors[0].code, jid).toBe('ERR_MULTI_JOB_NOT_FOUND');
    }
    const finals = await follow(run.web);
    expect(finals.map((m) => String(m.client_id)).sort()).toEqual(['web-1', 'web-2']);
  });

  test('GET /tunnels lists only the tunnels of clients in the scope', async () => {
    for (const id of ['web-1', 'db-1']) {
      const agent = agents.find((a) => a.id === id);
      if (!agent) throw new Error(`no agent ${id}`);
      acceptTunnels(agent.agent);
      const res = await t.api.request('PUT', `/clients/${id}/tunnels?remote=127.0.0.1:22`, ADMIN_AUTH);
      expect(res.status, res.text).toBe(200);
    }
    const clientsOf = async (auth: typeof ADMIN_AUTH) =>
      ((await t.api.get('/tunnels', auth)).json.data as { client_id: string }[])
        .map((x) => x.client_id)
        .sort();
    expect(await clientsOf(ADMIN_AUTH)).toEqual(['db-1', 'web-1']);
    expect(await clientsOf(as(ALICE))).toEqual(['web-1']);
  });

  test('schedules: targets outside the scope refused when saved; others’ outside ones hidden (404)', async () => {
    const body = (targets: Record<string, unknown>) => ({
      name: `s-${Math.random()}`,
      schedule: '* * * * *',
      type: 'command',
      command: 'uptime',
      ...targets,
    });
    const refused = await t.api.post('/schedules', body({ client_ids: ['web-1', 'db-1'] }), as(ALICE));
    expect(refused.status).toBe(403);
    expect(refused.json.errors[0]).toMatchObject({
      code: 'ERR_CLIENTS_OUT_OF_SCOPE',
      title: 'The schedule targets 1 client(s) outside your client scope: db-1',
    });
    expect(
      (await t.api.post('/schedules', body({ tags: { operator: 'OR', tags: ['db'] } }), as(ALICE))).status,
    ).toBe(403);
    const admins = await t.api.post('/schedules', body({ group_ids: ['db'] }), ADMIN_AUTH);
    const adminsWeb = await t.api.post('/schedules', body({ client_ids: ['web-2'] }), ADMIN_AUTH);
    const hers = await t.api.post('/schedules', body({ group_ids: ['mixed'] }), as(ALICE));
    expect([admins.status, adminsWeb.status, hers.status]).toEqual([201, 201, 201]);
    const [adminId, adminWebId, herId] = [admins, adminsWeb, hers].map((r) => String(r.json.data.id));

    const ids = async (): Promise<string[]> => {
      const res = await t.api.get('/schedules', as(ALICE));
      expect(res.json.meta.count).toBe(res.json.data.length);
      return (res.json.data as { id: string }[]).map((s) => s.id).sort();
    };
    expect(await ids()).toEqual([adminWebId, herId].sort());
    expect((await t.api.get('/schedules', ADMIN_AUTH)).json.meta.count).toBe(3);
    for (const [method, path] of [
      ['GET', `/schedules/${adminId}`],
      ['GET', `/schedules/${adminId}/runs`],
      ['PUT', `/schedules/${adminId}`],
      ['DELETE', `/schedules/${adminId}`],
    ] as const) {
      const res = await t.api.request(method, path, {
        ...as(ALICE),
        ...(method === 'PUT' ? { body: body({ client_ids: ['web-1'] }) } : {}),
      });
      expect([res.status, res.json?.errors[0].code], `${method} ${path}`).toEqual([
        404,
        'ERR_SCHEDULE_NOT_FOUND',
      ]);
    }
    const widened = await t.api.put(`/schedules/${herId}`, body({ client_ids: ['db-1'] }), as(ALICE));
    expect([widened.status, widened.json.errors[0].code]).toEqual([403, 'ERR_CLIENTS_OUT_OF_SCOPE']);

    // The client group her schedule targets grows past her scope: its firing is refused, and it is hidden.
    const grown = await t.api.put(
      '/client-groups/mixed',
      { description: '', params: { client_id: ['web-1', 'db-1'] } },
      ADMIN_AUTH,
    );
    expect(grown.status).toBe(200);
    expect((await t.api.get(`/schedules/${herId}`, as(ALICE))).status).toBe(404);
    expect(await ids()).toEqual([adminWebId]);
    const before = agents.reduce((n, a) => n + a.runs.length, 0);
    clock.at += 60_000;
    await t.server.tickSchedules();
    const firings = await t.api.get(`/schedules/${herId}/runs`, ADMIN_AUTH);
    expect(firings.json.data[0]).toMatchObject({
      outcome: 'failed',
      reason: 'The run targets 1 client(s) outside your client scope: db-1',
    });
    for (const id of [adminId, adminWebId, herId])
      expect((await t.api.request('DELETE', `/schedules/${id}`, ADMIN_AUTH)).status).toBe(204);
    // The admin's schedules fired too (on db-1 and web-2).
    await waitFor(() => agents.reduce((n, a) => n + a.runs.length, 0) === before + 2, 10_000, 'two runs');
  });

  test('when the scope shrinks, runs reaching the clients left out are hidden and cannot be rerun', async () => {
    await ended(await t.api.post(`/commands/${run.own}/rerun?only=all`, undefined, as(ALICE)));
    await policy(['mixed']); // web-1 and db-1 now
    try {
      const rerun = await t.api.post(`/commands/${run.own}/rerun?only=all`, undefined, as(ALICE));
      expect([rerun.status, rerun.json.errors[0].code]).toEqual([404, 'ERR_MULTI_JOB_NOT_FOUND']);
      expect((await listed()).jids).toContain(run.mixed);
      expect((await listed()).jids).not.toContain(run.own);
    } finally {
      await policy(['web']);
    }
  });
});
