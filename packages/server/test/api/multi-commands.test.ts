import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { connectClient } from '../../../../test-support/agent-client.js';
import { AUTH, clientRecord, startGatewayServer, waitFor, type GatewayServer } from '../gateway/helpers.js';
import { sendResult, startJobAgent, succeed, type JobAgent } from './job-agents.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary JSON
type Json = any;

describe('commands and scripts on many clients', () => {
  let t: GatewayServer;
  let web1: JobAgent;
  let web2: JobAgent;
  let db1: JobAgent;
  let agents: JobAgent[];

  beforeAll(async () => {
    t = await startGatewayServer();
    web1 = await startJobAgent(t, 'web-1', {
      tags: ['web', 'prod'],
      labels: { city: 'Berlin', os: 'linux' },
    });
    web2 = await startJobAgent(t, 'web-2', { tags: ['web'], labels: { city: 'Paris', os: 'linux' } });
    db1 = await startJobAgent(t, 'db-1', { tags: ['db', 'prod'], labels: { City: 'berlin' } });
    agents = [web1, web2, db1];
    const gone = await connectClient(t.agent('agents-b'), { client_id: 'old-box', tags: ['web'] });
    await gone.close();
    await waitFor(async () => (await clientRecord(t, 'old-box'))?.connection_state === 'disconnected');
  });
  afterAll(async () => {
    for (const a of agents ?? []) await a.agent.close();
    await t?.stop();
  });

  const post = (path: string, body: unknown) => t.api.post(path, body, { auth: AUTH });
  const runCount = () => agents.reduce((n, a) => n + a.runs.length, 0);
  const resetAgents = () => {
    for (const a of agents) {
      a.runs.length = 0;
      a.behaviour = succeed;
    }
  };
  /** The multi-client job once every child has ended. */
  const finished = (jid: string, children: number): Promise<Json> =>
    waitFor(
      async (): Promise<Json> => {
        const res = await t.api.get(`/commands/${jid}`, { auth: AUTH });
        const job: { jobs: { status: string }[] } = res.json.data;
        const done = job.jobs.length === children && job.jobs.every((j) => j.status !== 'running');
        return done ? job : undefined;
      },
      10_000,
      `multi-client job ${jid} to finish`,
    );
  const byClient = (job: Json): Record<string, Json> =>
    Object.fromEntries((job.jobs as { client_id: string }[]).map((j) => [j.client_id, j]));

  test('every route needs credentials', async () => {
    for (const [method, path] of [
      ['POST', '/commands'],
      ['GET', '/commands'],
      ['GET', '/commands/00000000-0000-4000-8000-000000000000'],
      ['GET', '/commands/00000000-0000-4000-8000-000000000000/jobs'],
      ['POST', '/scripts'],
    ] as const) {
      const res = await t.api.request(method, path, method === 'POST' ? { body: { command: 'x' } } : {});
      expect(res.status, `${method} ${path}`).toBe(401);
    }
    const unversioned = await fetch(`${t.server.apiUrl?.replace(/\/v1$/, '')}/scripts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ script: 'bHM=', client_ids: ['web-1'] }),
    });
    expect(unversioned.status).toBe(401);
    expect(runCount()).toBe(0);
  });

  test('client_ids: each client runs the command once, in order; GET /commands/{jid} is spec 2.10', async () => {
    resetAgents();
    const res = await post('/commands', {
      command: '/usr/bin/uptime',
      client_ids: ['db-1', 'web-1'],
      timeout_sec: 7,
      cwd: '/tmp',
      is_sudo: true,
      interpreter: 'sh',
    });
    expect(res.status).toBe(200);
    const jid = res.json.data.jid as string;
    const job = await finished(jid, 2);
    expect(job).toMatchObject({
      jid,
      created_by: 'admin',
      client_ids: ['db-1', 'web-1'],
      group_ids: null,
      tags: null,
      labels: null,
      command: '/usr/bin/uptime',
      cwd: '/tmp',
      interpreter: 'sh',
      is_sudo: true,
      is_script: false,
      timeout_sec: 7,
      concurrent: false,
      abort_on_err: true,
    });
    expect(job.started_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(job.jobs.map((j: { client_id: string }) => j.client_id)).toEqual(['db-1', 'web-1']);
    // The run as a whole: ended, successful, at its last child's end; the summary alone tells the same.
    const ends = job.jobs.map((j: { finished_at: string }) => j.finished_at).sort();
    expect(job).toMatchObject({ status: 'successful', finished_at: ends.at(-1) });
    const summary = await t.api.get(`/commands/${jid}?fields[commands]=status,finished_at`, { auth: AUTH });
    expect(summary.json.data).toEqual({ status: 'successful', finished_at: ends.at(-1) });
    for (const child of job.jobs)
      expect(child).toMatchObject({
        multi_job_id: jid,
        status: 'successful',
        command: '/usr/bin/uptime',
        cwd: '/tmp',
        is_sudo: true,
        timeout_sec: 7,
        created_by: 'admin',
        result: { stdout: `${child.client_id} ran /usr/bin/uptime\n` },
      });
    expect(db1.runs).toHaveLength(1);
    expect(web1.runs).toHaveLength(1);
    expect(web2.runs).toHaveLength(0);
    expect(web1.runs[0]).toMatchObject({
      command: '/usr/bin/uptime',
      cwd: '/tmp',
      is_sudo: true,
      timeout_sec: 7,
    });
    // The child is also a job of its client.
    const single = await t.api.get(`/clients/web-1/commands/${byClient(job)['web-1'].jid}`, { auth: AUTH });
    expect(single.json.data.multi_job_id).toBe(jid);
  });

  test('an unknown client id is 404 and nothing runs; an unknown group id is 404', async () => {
    resetAgents();
    const before = (await t.api.get('/commands', { auth: AUTH })).json.meta.count;
    const res = await post('/commands', { command: '/usr/bin/id', client_ids: ['web-1', 'nobody'] });
    expect(res.status).toBe(404);
    expect(res.json.errors[0]).toMatchObject({ code: 'ERR_CLIENT_NOT_FOUND' });
    expect(res.json.errors[0].title).toMatch(/nobody/);
    const group = await post('/commands', { command: '/usr/bin/id', group_ids: ['servers'] });
    expect(group.status).toBe(404);
    expect(group.json.errors[0]).toMatchObject({ code: 'ERR_CLIENT_GROUP_NOT_FOUND' });
    expect(group.json.errors[0].title).toMatch(/servers/);
    expect((await t.api.get('/commands', { auth: AUTH })).json.meta.count).toBe(before);
    expect(runCount()).toBe(0);
    expect((await t.api.get('/commands/00000000-0000-4000-8000-000000000000', { auth: AUTH })).status).toBe(
      404,
    );
  });

  test('group_ids run on the members of real client groups, merged with client_ids without duplicates', async () => {
    resetAgents();
    const created = await post('/client-groups', { id: 'berliners', params: { labels: ['city: berlin'] } });
    expect(created.status).toBe(201);
    try {
      const res = await post('/commands', {
        command: '/usr/bin/id',
        client_ids: ['web-2', 'web-1'],
        group_ids: ['berliners'],
        execute_concurrently: true,
      });
      expect(res.status).toBe(200);
      const job = await finished(res.json.data.jid, 3);
      expect(Object.keys(byClient(job)).sort()).toEqual(['db-1', 'web-1', 'web-2']);
      expect(job.group_ids).toEqual(['berliners']);
      expect([web1.runs.length, web2.runs.length, db1.runs.length]).toEqual([1, 1, 1]);
    } finally {
      await t.api.delete('/client-groups/berliners', { auth: AUTH });
    }
  });

  test('a disconnected client gets a failed child saying so, and the others still run', async () => {
    resetAgents();
    const res = await post('/commands', { command: '/usr/bin/id', client_ids: ['old-box', 'web-2'] });
    expect(res.status).toBe(200);
    const children = byClient(await finished(res.json.data.jid, 2));
    expect(children['old-box']).toMatchObject({
      status: 'failed',
      error: 'client is not connected',
      pid: null,
    });
    expect(children['old-box'].finished_at).not.toBeNull();
    expect(children['web-2']).toMatchObject({ status: 'successful' });
    expect(web2.runs).toHaveLength(1);
  });

  test('tags: OR picks clients with any of them, AND those with all; disconnected ones get failed children', async () => {
    resetAgents();
    const anyOf = await post('/commands', {
      command: '/usr/bin/w',
      tags: { operator: 'OR', tags: ['db', 'prod'] },
    });
    expect(Object.keys(byClient(await finished(anyOf.json.data.jid, 2))).sort()).toEqual(['db-1', 'web-1']);
    const allOf = await post('/commands', {
      command: '/usr/bin/w',
      tags: { operator: 'and', tags: ['web', 'prod'] },
    });
    const job = await finished(allOf.json.data.jid, 1);
    expect(job.jobs[0].client_id).toBe('web-1');
    expect(job.tags).toEqual({ operator: 'AND', tags: ['web', 'prod'] });
    const withOffline = await post('/commands', { command: '/usr/bin/w', tags: { tags: ['web'] } });
    const children = byClient(await finished(withOffline.json.data.jid, 3));
    expect(Object.keys(children).sort()).toEqual(['old-box', 'web-1', 'web-2']);
    expect(children['old-box'].status).toBe('failed');
    const none = await post('/commands', {
      command: '/usr/bin/w',
      tags: { operator: 'AND', tags: ['web', 'db'] },
    });
    expect(none.status).toBe(400);
    expect(none.json.errors[0]).toMatchObject({ code: 'ERR_NO_TARGETS' });
  });

  test('labels: key:value, case-insensitive with blanks around the colon ignored; AND and OR', async () => {
    resetAgents();
    const berlin = await post('/commands', {
      command: '/usr/bin/w',
      labels: { operator: 'OR', labels: ['CITY : berlin'] },
    });
    expect(berlin.status).toBe(200);
    expect(Object.keys(byClient(await finished(berlin.json.data.jid, 2))).sort()).toEqual(['db-1', 'web-1']);
    const both = await post('/commands', {
      command: '/usr/bin/w',
      labels: { operator: 'AND', labels: ['city:berlin', 'os:linux'] },
    });
    expect(Object.keys(byClient(await finished(both.json.data.jid, 1)))).toEqual(['web-1']);
    const either = await post('/commands', {
      command: '/usr/bin/w',
      labels: { operator: 'OR', labels: ['city:paris', 'city:berlin'] },
    });
    expect(Object.keys(byClient(await finished(either.json.data.jid, 3))).sort()).toEqual([
      'db-1',
      'web-1',
      'web-2',
    ]);
  });

  test('sequential with abort_on_error: the first failure stops the rest, which get failed children', async () => {
    resetAgents();
    web1.behaviour = () => ({ result: { end: { status: 'failed', exit_code: 2, error: 'exit status 2' } } });
    const res = await post('/commands', {
      command: '/usr/bin/false',
      client_ids: ['web-1', 'web-2', 'db-1'],
    });
    const job = await finished(res.json.data.jid, 3);
    // Children come oldest first; those recorded together are ordered by client id.
    expect(job.jobs.map((j: { client_id: string; status: string }) => [j.client_id, j.status])).toEqual([
      ['web-1', 'failed'],
      ['db-1', 'failed'],
      ['web-2', 'failed'],
    ]);
    const children = byClient(job);
    expect(children['web-1']).toMatchObject({ exit_code: 2, error: 'exit status 2' });
    for (const id of ['web-2', 'db-1'])
      expect(children[id].error).toBe('not started: an earlier client failed and abort_on_error is set');
    expect(web2.runs).toHaveLength(0);
    expect(db1.runs).toHaveLength(0);
  });

  test('sequential: a refusal aborts too; abort_on_error false runs every client; unknown (timeout) never aborts', async () => {
    resetAgents();
    web1.behaviour = () => ({ refuse: 'command is not allowed' });
    const refused = await post('/commands', { command: '/usr/bin/x', client_ids: ['web-1', 'web-2'] });
    const stopped = byClient(await finished(refused.json.data.jid, 2));
    expect(stopped['web-1'].error).toBe('refused by the client: command is not allowed');
    expect(stopped['web-2'].error).toMatch(/^not started/);
    expect(web2.runs).toHaveLength(0);

    const all = await post('/commands', {
      command: '/usr/bin/x',
      client_ids: ['web-1', 'web-2', 'db-1'],
      abort_on_error: false,
    });
    const ran = byClient(await finished(all.json.data.jid, 3));
    expect(ran['web-1'].status).toBe('failed');
    expect([ran['web-2'].status, ran['db-1'].status]).toEqual(['successful', 'successful']);

    resetAgents();
    web1.behaviour = () => ({ result: { end: { status: 'unknown', exit_code: null, error: 'timeout' } } });
    const timedOut = await post('/commands', {
      command: '/usr/bin/sleep 99',
      client_ids: ['web-1', 'web-2'],
    });
    const after = byClient(await finished(timedOut.json.data.jid, 2));
    expect([after['web-1'].status, after['web-2'].status]).toEqual(['unknown', 'successful']);
  });

  test('concurrent mode starts every client without waiting for results, and ignores abort_on_error', async () => {
    resetAgents();
    // Each agent holds its result until all three have received their job: only a concurrent run completes.
    let release: () => void = () => undefined;
    const allStarted = new Promise<void>((resolve) => (release = resolve));
    for (const a of agents)
      a.behaviour = () => {
        if (runCount() === 3) release();
        return {
          result: allStarted.then(() =>
            a === web1 ? { end: { status: 'failed' as const, exit_code: 1, error: 'exit status 1' } } : {},
          ),
        };
      };
    const res = await post('/commands', {
      command: '/usr/bin/hostname',
      client_ids: ['web-1', 'web-2', 'db-1', 'old-box'],
      execute_concurrently: true,
    });
    const job = await finished(res.json.data.jid, 4);
    expect(job.concurrent).toBe(true);
    const children = byClient(job);
    expect(children['web-1'].status).toBe('failed');
    expect([children['web-2'].status, children['db-1'].status]).toEqual(['successful', 'successful']);
    expect(children['old-box'].error).toBe('client is not connected');
  });

  test('GET /commands/{jid} counts the children by status in meta.jobs, also without reading them', async () => {
    resetAgents();
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    for (const a of agents)
      a.behaviour = () => ({
        result: released.then(() =>
          a === web1 ? { end: { status: 'failed' as const, exit_code: 1, error: 'exit status 1' } } : {},
        ),
      });
    const res = await post('/commands', {
      command: '/usr/bin/uptime',
      client_ids: ['web-1', 'web-2', 'db-1', 'old-box'],
      execute_concurrently: true,
    });
    const jid: string = res.json.data.jid;
    await waitFor(() => runCount() === 3, 5000, 'three job.run requests');
    const countOnly = await t.api.get(`/commands/${jid}?fields[commands]=jid`, { auth: AUTH });
    expect(countOnly.status).toBe(200);
    expect(countOnly.json).toEqual({
      data: { jid },
      meta: {
        jobs: {
          running: 3,
          successful: 0,
          failed: 1,
          unknown: 0,
          queued: 0,
          expired: 0,
          cancelled: 0,
          skipped: 0,
        },
      },
    });
    release();
    const job = await finished(jid, 4);
    const full = await t.api.get(`/commands/${jid}`, { auth: AUTH });
    expect(full.json.data).toEqual(job);
    expect(full.json.meta).toEqual({
      jobs: {
        running: 0,
        successful: 2,
        failed: 2,
        unknown: 0,
        queued: 0,
        expired: 0,
        cancelled: 0,
        skipped: 0,
      },
    });
    const counted = await t.api.get(`/commands/${jid}?fields[commands]=jid,command`, { auth: AUTH });
    expect(counted.json).toEqual({ data: { jid, command: '/usr/bin/uptime' }, meta: full.json.meta });
    const targets = await t.api.get(`/commands/${jid}?fields[commands]=client_ids,tags`, { auth: AUTH });
    expect(targets.json.data).toEqual({ client_ids: ['web-1', 'web-2', 'db-1', 'old-box'], tags: null });
  });

  test('GET /commands/{jid}/jobs pages, sorts and filters the children; an unknown jid is 404', async () => {
    resetAgents();
    const res = await post('/commands', {
      command: '/usr/bin/id',
      client_ids: ['web-1', 'web-2', 'db-1', 'old-box'],
      execute_concurrently: true,
    });
    const jid: string = res.json.data.jid;
    const job = await finished(jid, 4);
    const get = (query: string) => t.api.get(`/commands/${jid}/jobs${query}`, { auth: AUTH });
    const first = await get('?page[limit]=3');
    const rest = await get('?page[limit]=3&page[offset]=3');
    expect(first.status).toBe(200);
    expect(first.json.meta).toEqual({ count: 4 });
    expect(first.json.data).toHaveLength(3);
    expect(rest.json.data).toHaveLength(1);
    const paged = [...first.json.data, ...rest.json.data] as { jid: string }[];
    const jids = paged.map((j) => j.jid);
    expect(jids.sort()).toEqual((job.jobs as { jid: string }[]).map((j) => j.jid).sort());
    expect(new Set(jids).size).toBe(4);
    expect(byClient({ jobs: paged })).toEqual(byClient(job));

    const sorted = await get('?sort=-client_id&fields[jobs]=client_id,status');
    expect(sorted.json).toEqual({
      data: [
        { client_id: 'web-2', status: 'successful' },
        { client_id: 'web-1', status: 'successful' },
        { client_id: 'old-box', status: 'failed' },
        { client_id: 'db-1', status: 'successful' },
      ],
      meta: { count: 4 },
    });
    const failed = await get('?filter[status]=failed&fields[jobs]=client_id');
    expect(failed.json).toEqual({ data: [{ client_id: 'old-box' }], meta: { count: 1 } });
    expect((await get('?page[limit]=1001')).status).toBe(400);
    const unknown = await t.api.get('/commands/00000000-0000-4000-8000-000000000000/jobs', { auth: AUTH });
    expect(unknown.status).toBe(404);
  });

  test('scripts on many clients: POST /scripts and the unversioned /api/scripts', async () => {
    resetAgents();
    const script = '#!/bin/sh\necho ✓\n';
    const body = {
      script: Buffer.from(script).toString('base64'),
      client_ids: ['web-1'],
      interpreter: 'bash',
    };
    const res = await post('/scripts', body);
    expect(res.status).toBe(200);
    const job = await finished(res.json.data.jid, 1);
    expect(job).toMatchObject({ is_script: true, command: script, interpreter: 'bash' });
    expect(job.jobs[0]).toMatchObject({ is_script: true, command: script, status: 'successful' });
    expect(web1.runs[0]).toMatchObject({ command: '', script: body.script, interpreter: 'bash' });

    const unversioned = await fetch(`${t.server.apiUrl?.replace(/\/v1$/, '')}/scripts`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Basic ${Buffer.from('admin:admin-secret-1').toString('base64')}`,
      },
      body: JSON.stringify({ ...body, client_ids: ['web-2'] }),
    });
    expect(unversioned.status).toBe(200);
    const viaApi = (await unversioned.json()) as Json;
    expect((await finished(viaApi.data.jid, 1)).jobs[0].client_id).toBe('web-2');
  });

  test('GET /commands lists multi-client jobs, newest first, with the list grammar', async () => {
    const list = await t.api.get('/commands', { auth: AUTH });
    expect(list.status).toBe(200);
    expect(list.json.meta.count).toBeGreaterThanOrEqual(10);
    const started = list.json.data.map((j: { started_at: string }) => j.started_at);
    expect([...started].sort().reverse()).toEqual(started);
    expect(list.json.data[0].jobs).toBeUndefined();
    const scripts = await t.api.get('/commands?filter[is_script]=1&fields[commands]=jid,is_script', {
      auth: AUTH,
    });
    expect(scripts.json.data).toHaveLength(2);
    for (const j of scripts.json.data) expect(j).toEqual({ jid: j.jid, is_script: true });
    expect((await t.api.get('/commands?sort=pid', { auth: AUTH })).status).toBe(400);
    const paged = await t.api.get('/commands?page[limit]=2', { auth: AUTH });
    expect(paged.json.data).toHaveLength(2);
  });

  test('a library script runs on many clients by script_id, with its stored options unless the request gives them', async () => {
    resetAgents();
    const text = '#!/bin/sh\necho from the library\n';
    const stored = await post('/library/scripts', {
      name: 'multi-by-id',
      script: text,
      interpreter: '/bin/sh',
      cwd: '/srv',
      is_sudo: true,
      timeout_sec: 7,
    });
    expect(stored.status).toBe(201);
    const id = stored.json.data.id as string;
    const res = await post('/scripts', { script_id: id, client_ids: ['web-1', 'web-2'], cwd: '/tmp' });
    expect(res.status, res.text).toBe(200);
    const job = await finished(res.json.data.jid, 2);
    expect(job).toMatchObject({
      is_script: true,
      command: text,
      cwd: '/tmp',
      interpreter: '/bin/sh',
      timeout_sec: 7,
    });
    for (const agent of [web1, web2]) {
      expect(agent.runs).toHaveLength(1);
      expect(agent.runs[0]).toMatchObject({
        command: '',
        script: Buffer.from(text).toString('base64'),
        interpreter: '/bin/sh',
        cwd: '/tmp',
        is_sudo: true,
        timeout_sec: 7,
      });
    }
    const before = runCount();
    const unknown = await post('/scripts', { script_id: 'no-such-script', client_ids: ['web-1'] });
    expect(unknown.status).toBe(404);
    expect(unknown.json.errors[0]).toMatchObject({
      code: 'ERR_LIBRARY_SCRIPT_NOT_FOUND',
      title: "script_id: no library script has the id 'no-such-script'",
    });
    const both = await post('/scripts', { script_id: id, script: 'bHM=', client_ids: ['web-1'] });
    expect(both.status).toBe(400);
    expect(both.json.errors[0].title).toMatch(/unknown field 'script'/);
    const untargeted = await post('/scripts', { script_id: id });
    expect(untargeted.status).toBe(400);
    expect(untargeted.json.errors[0].title).toMatch(/Missing targeting parameters/);
    expect(runCount()).toBe(before);
  });

  test('every bad body shape is a 400 that says what to fix, and nothing runs', async () => {
    resetAgents();
    const ids = { client_ids: ['web-1'] };
    const cases: [string, unknown, RegExp][] = [
      ['/commands', ids, /command/],
      ['/commands', { command: 'ls' }, /Missing targeting parameters/],
      ['/commands', { command: 'ls', client_ids: [] }, /Missing targeting parameters/],
      ['/commands', { command: ' ', ...ids }, /command: must not be empty/],
      ['/commands', { command: 'ls', client_ids: 'web-1' }, /client_ids/],
      ['/commands', { command: 'ls', client_ids: [''] }, /client_ids\.0/],
      ['/commands', { command: 'ls', ...ids, tags: { tags: ['web'] } }, /Multiple targeting parameters/],
      ['/commands', { command: 'ls', group_ids: ['g'], labels: { labels: ['a:b'] } }, /Multiple targeting/],
      [
        '/commands',
        { command: 'ls', tags: { tags: ['web'] }, labels: { labels: ['a:b'] } },
        /Multiple targeting/,
      ],
      ['/commands', { command: 'ls', tags: { tags: [] } }, /tags\.tags: list at least one tag/],
      [
        '/commands',
        { command: 'ls', tags: { operator: 'XOR', tags: ['web'] } },
        /tags\.operator: must be AND or OR/,
      ],
      ['/commands', { command: 'ls', tags: ['web'] }, /tags/],
      ['/commands', { command: 'ls', labels: { labels: ['nocolon'] } }, /key:value/],
      ['/commands', { command: 'ls', labels: { labels: [':value'] } }, /label key must not be empty/],
      [
        '/commands',
        { command: 'ls', labels: { labels: ['a:b'], extra: 1 } },
        /unknown field 'extra' in labels/,
      ],
      ['/commands', { command: 'ls', ...ids, execute_concurrently: 'yes' }, /execute_concurrently/],
      ['/commands', { command: 'ls', ...ids, abort_on_error: 1 }, /abort_on_error/],
      ['/commands', { command: 'ls', ...ids, timeout_sec: 0 }, /timeout_sec/],
      ['/commands', { command: 'ls', ...ids, script: 'bHM=' }, /unknown field 'script'/],
      ['/commands', [], /expected object/],
      ['/scripts', ids, /script/],
      ['/scripts', { script: 'not base64!', ...ids }, /script: must be valid base64/],
      ['/scripts', { script: Buffer.from('  ').toString('base64'), ...ids }, /decoded script is empty/],
      ['/scripts', { script: 'bHM=' }, /Missing targeting parameters/],
    ];
    for (const [path, body, title] of cases) {
      const res = await post(path, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.errors[0].title, JSON.stringify(body)).toMatch(title);
    }
    expect(runCount()).toBe(0);
  });

  test('svcd stopping mid-run records the clients not yet started; a result sent after the restart is kept', async () => {
    resetAgents();
    // web-1 starts its job but sends no result before svcd stops.
    web1.behaviour = () => ({ result: new Promise(() => undefined) });
    const res = await post('/commands', {
      command: '/usr/bin/sleep 5',
      client_ids: ['web-1', 'web-2', 'db-1'],
    });
    const jid = res.json.data.jid as string;
    await waitFor(() => web1.runs.length === 1);
    const childJid = web1.runs[0]!.jid;
    for (const a of agents) await a.agent.close();
    await t.restart();
    const interrupted = byClient((await t.api.get(`/commands/${jid}`, { auth: AUTH })).json.data);
    expect(interrupted['web-1'].status).toBe('running');
    for (const id of ['web-2', 'db-1'])
      expect(interrupted[id]).toMatchObject({
        status: 'failed',
        error: 'not started: svcd was shutting down',
      });
    expect(web2.runs).toHaveLength(0);
    // The agent offers its result again after reconnecting, as svc does.
    web1 = await startJobAgent(t, 'web-1');
    agents = [web1];
    await sendResult(web1.agent, childJid, { stdout: Buffer.from('slept\n') });
    const done = byClient((await t.api.get(`/commands/${jid}`, { auth: AUTH })).json.data);
    expect(done['web-1']).toMatchObject({ status: 'successful', result: { stdout: 'slept\n' } });
  });

  test('a restart of svcd keeps every multi-client job and its finished children', async () => {
    resetAgents();
    const res = await post('/commands', { command: '/usr/bin/uptime', client_ids: ['web-1', 'old-box'] });
    const before = await finished(res.json.data.jid, 2);
    expect(before.jobs.map((j: { status: string }) => j.status)).toEqual(['successful', 'failed']);
    for (const a of agents) await a.agent.close();
    agents = [];
    await t.restart();
    const after = await t.api.get(`/commands/${before.jid}`, { auth: AUTH });
    expect(after.json.data).toEqual(before);
  });
});

describe('concurrent mode dispatches in a bounded window', () => {
  let t: GatewayServer;
  const agents: JobAgent[] = [];

  beforeAll(async () => {
    t = await startGatewayServer({ concurrentJobWindow: 2 });
    for (let i = 1; i <= 5; i += 1) agents.push(await startJobAgent(t, `node-${i}`, { tags: ['fleet'] }));
  });
  afterAll(async () => {
    for (const a of agents) await a.agent.close();
    await t?.stop();
  });

  test('no more job.run requests are open at once than the window; every client runs', async () => {
    let open = 0;
    let most = 0;
    const gates: (() => void)[] = [];
    for (const a of agents)
      a.behaviour = () => {
        open += 1;
        most = Math.max(most, open);
        const startedAfter = new Promise<void>((resolve) => gates.push(resolve)).then(() => (open -= 1));
        return { result: startedAfter.then(() => ({})), startedAfter };
      };
    const res = await t.api.post(
      '/commands',
      { command: '/usr/bin/true', tags: { tags: ['fleet'] }, execute_concurrently: true },
      { auth: AUTH },
    );
    expect(res.status).toBe(200);
    const jid = res.json.data.jid as string;
    const children = async () =>
      ((await t.api.get(`/commands/${jid}`, { auth: AUTH })).json.data.jobs as unknown[]).length;
    // Five clients in windows of two: 2, 2, 1.
    for (const [total, inWindow] of [
      [2, 2],
      [4, 2],
      [5, 1],
    ] as const) {
      await waitFor(() => gates.length === total, 5000, `${total} job.run requests`);
      // While this window's job.run requests are unanswered the run is blocked: no further child exists.
      expect(await children()).toBe(total);
      expect(open).toBe(inWindow);
      for (const gate of gates.slice(total - inWindow)) gate();
    }
    expect(most).toBe(2);
    const job = await waitFor(async () => {
      const data: { jobs: { status: string }[] } = (
        await t.api.get(`/commands/${res.json.data.jid}`, { auth: AUTH })
      ).json.data;
      return data.jobs.length === 5 && data.jobs.every((j) => j.status === 'successful') && data;
    });
    expect(job.jobs).toHaveLength(5);
  });
});
