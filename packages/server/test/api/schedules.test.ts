import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { StoredFiring } from '../../src/core/schedules/ports.js';
import { ADMIN, OPERATOR, startTestServer, type TestServer } from '../../../../test-support/server.js';
import { waitFor } from '../gateway/helpers.js';
import { agentsOf, startJobAgent, succeed, type JobAgent, type Output } from './job-agents.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary JSON
type Json = any;

const asOperator = { auth: { basic: [OPERATOR.username, OPERATOR.password] as [string, string] } };
const asAdmin = { auth: { basic: [ADMIN.username, ADMIN.password] as [string, string] } };
const UNKNOWN = '00000000-0000-4000-8000-000000000000';
const MINUTE = 60_000;

/** The clock schedules are created and fired by; tests move it and tick. */
const clock = { at: Date.parse('2030-03-04T10:00:30Z'), now: () => new Date(clock.at) };

describe('schedules API', () => {
  let t: TestServer;
  const agents: JobAgent[] = [];
  const firings: StoredFiring[] = [];

  /** What startJobAgent needs of a gateway test server. */
  const gateway = () => agentsOf(t);
  const connect = async (id: string, labels: Record<string, string>) => {
    const agent = await startJobAgent(gateway(), id, { labels });
    agents.push(agent);
    return agent;
  };

  beforeAll(async () => {
    t = await startTestServer({
      store: 'database:sqlite',
      clientAuth: { source: 'file', entries: { 'agents-a': 'secret-a-123' } },
      sections: { schedules: { missed_run_window: '1h', catch_up_delay: 0 } },
      tuning: { scheduleClock: clock, onScheduleFiring: (f) => firings.push(f) },
    });
    await connect('berlin-1', { city: 'Berlin' });
    await connect('paris-1', { city: 'Paris' });
    const group = await t.api.post(
      '/client-groups',
      { id: 'berliners', params: { labels: ['city: berlin'] } },
      asOperator,
    );
    expect(group.status, group.text).toBe(201);
  });
  afterAll(async () => {
    for (const a of agents) await a.agent.close();
    await t?.stop();
  });

  const create = async (body: Record<string, unknown>): Promise<Json> => {
    const res = await t.api.post('/schedules', body, asOperator);
    expect(res.status, res.text).toBe(201);
    return res.json.data;
  };
  /** Moves the clock to the schedule's next firing (plus a little) and fires what is due. */
  const fireNext = async (id: string, lateMs = 150): Promise<number> => {
    const { next_run_at } = (await t.api.get(`/schedules/${id}`, asOperator)).json.data;
    clock.at = Date.parse(next_run_at) + lateMs;
    return t.server.tickSchedules();
  };
  const history = async (id: string): Promise<Json> =>
    (await t.api.get(`/schedules/${id}/runs`, asOperator)).json;
  const runFinished = (jid: string) =>
    waitFor(
      async (): Promise<Json> => {
        const res = await t.api.get(`/commands/${jid}`, asOperator);
        const run: Json = res.json.data;
        return run.status !== 'running' && run;
      },
      10_000,
      `run ${jid} to finish`,
    );
  const firstError = (res: { json: Json }) =>
    res.json.errors[0] as { code: string; title: string; detail: string };

  test('every route answers 401 without credentials and changes nothing', async () => {
    const kept = await create({
      name: 'kept',
      schedule: '0 3 * * *',
      type: 'command',
      command: 'id',
      client_ids: ['paris-1'],
    });
    const body = {
      name: 'x',
      schedule: '* * * * *',
      type: 'command',
      command: 'id',
      client_ids: ['paris-1'],
    };
    for (const [method, path, payload] of [
      ['POST', '/schedules', body],
      ['GET', '/schedules', undefined],
      ['GET', `/schedules/${kept.id}`, undefined],
      ['PUT', `/schedules/${kept.id}`, body],
      ['DELETE', `/schedules/${kept.id}`, undefined],
      ['GET', `/schedules/${kept.id}/runs`, undefined],
    ] as const) {
      const res = await t.api.request(method, path, { body: payload });
      expect(res.status, `${method} ${path}`).toBe(401);
      const wrong = await t.api.request(method, path, {
        body: payload,
        auth: { basic: [OPERATOR.username, 'wrong'] },
      });
      expect(wrong.status, `${method} ${path}`).toBe(401);
    }
    expect((await t.api.get(`/schedules/${kept.id}`, asAdmin)).json.data.name).toBe('kept');
    await t.api.delete(`/schedules/${kept.id}`, asAdmin);
  });

  test('POST answers 201 with the schedule in OpenRPort shape, defaults and the next firing in its time zone', async () => {
    const s = await create({
      name: 'nightly',
      schedule: '30 2 * * *',
      timezone: 'Europe/Berlin',
      type: 'command',
      command: 'uptime',
      group_ids: ['berliners'],
    });
    expect(s).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'nightly',
      schedule: '30 2 * * *',
      timezone: 'Europe/Berlin',
      type: 'command',
      client_ids: null,
      group_ids: ['berliners'],
      tags: null,
      labels: null,
      command: 'uptime',
      script: '',
      script_id: null,
      interpreter: '',
      cwd: '',
      is_sudo: false,
      timeout_sec: 60,
      execute_concurrently: false,
      abort_on_error: true,
      overlaps: false,
      env: null,
      created_at: new Date(clock.at).toISOString(),
      created_by: OPERATOR.username,
      updated_at: new Date(clock.at).toISOString(),
      updated_by: OPERATOR.username,
      // 02:30 in Berlin (CET, +01:00) on the next day.
      next_run_at: '2030-03-05T01:30:00.000Z',
      last_execution: null,
    });
    expect((await t.api.get(`/schedules/${s.id}`, asOperator)).json.data).toEqual(s);
    const listed = await t.api.get('/schedules?filter[name]=nightly&fields[schedules]=id,name', asOperator);
    expect(listed.json).toEqual({ data: [{ id: s.id, name: 'nightly' }], meta: { count: 1 } });

    const put = await t.api.put(
      `/schedules/${s.id}`,
      {
        name: 'hourly',
        schedule: '@hourly',
        type: 'script',
        script: 'ZWNobyBoaQ==',
        tags: { tags: ['web'] },
        overlaps: true,
      },
      asAdmin,
    );
    expect(put.status, put.text).toBe(200);
    expect(put.json.data).toMatchObject({
      id: s.id,
      name: 'hourly',
      type: 'script',
      script: 'ZWNobyBoaQ==',
      command: '',
      group_ids: null,
      tags: { operator: 'OR', tags: ['web'] },
      overlaps: true,
      created_by: OPERATOR.username,
      updated_by: ADMIN.username,
      timezone: 'UTC',
      next_run_at: '2030-03-04T11:00:00.000Z',
    });
    expect((await t.api.delete(`/schedules/${s.id}`, asOperator)).status).toBe(204);
    expect((await t.api.get(`/schedules/${s.id}`, asOperator)).status).toBe(404);
  });

  test('an unknown id is 404 on every item route', async () => {
    const body = {
      name: 'x',
      schedule: '* * * * *',
      type: 'command',
      command: 'id',
      client_ids: ['paris-1'],
    };
    for (const [method, path, payload] of [
      ['GET', `/schedules/${UNKNOWN}`, undefined],
      ['PUT', `/schedules/${UNKNOWN}`, body],
      ['DELETE', `/schedules/${UNKNOWN}`, undefined],
      ['GET', `/schedules/${UNKNOWN}/runs`, undefined],
    ] as const) {
      const res = await t.api.request(method, path, { body: payload, ...asOperator });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(firstError(res)).toMatchObject({
        code: 'ERR_SCHEDULE_NOT_FOUND',
        title: `Schedule '${UNKNOWN}' not found`,
      });
    }
  });

  test.each([
    [{ schedule: '61 * * * *' }, 'schedule: minute: 61 is out of range 0-59'],
    [{ schedule: '* * *' }, 'schedule: expected 5 fields'],
    [{ schedule: '0 0 30 2 *' }, "schedule: '0 0 30 2 *' never fires"],
    [{ timezone: 'Mars/Olympus' }, "timezone: 'Mars/Olympus' is not a known time zone"],
    [{ command: undefined }, 'command: is required when type is "command"'],
    [{ script: 'ZWNobw==' }, 'script: only with type "script"'],
    [
      { type: 'script', command: undefined },
      'script: a schedule of type "script" needs script (base64) or script_id',
    ],
    [
      { type: 'script', command: undefined, script: 'ZWNobw==', script_id: 'x' },
      'script: give script or script_id, not both',
    ],
    [{ type: 'program' }, 'type: must be "command" or "script"'],
    [{ client_ids: undefined }, 'Missing targeting parameters'],
    [{ labels: { labels: ['a:b'] } }, 'Multiple targeting parameters'],
    [{ name: '' }, 'name: must not be empty'],
    [{ name: undefined }, 'name: is required'],
    [{ cron: '* * * * *' }, "unknown field 'cron'"],
    [{ overlaps: 'yes' }, 'overlaps:'],
  ])('POST %j is 400: %s', async (change, message) => {
    const body: Record<string, unknown> = {
      name: 'bad',
      schedule: '* * * * *',
      type: 'command',
      command: 'id',
      client_ids: ['paris-1'],
      ...change,
    };
    const res = await t.api.post('/schedules', body, asOperator);
    expect(res.status, res.text).toBe(400);
    expect(firstError(res).title).toContain(message);
    expect((await t.api.get('/schedules?filter[name]=bad', asOperator)).json.meta.count).toBe(0);
  });

  test('each firing is a normal run linked by schedule_id, on the group as it is at that minute', async () => {
    const s = await create({
      name: 'group-run',
      schedule: '*/5 * * * *',
      type: 'command',
      command: 'date',
      group_ids: ['berliners'],
    });
    expect(await fireNext(s.id)).toBe(1);
    let h = await history(s.id);
    expect(h.meta).toEqual({ count: 1, outcomes: { started: 1, skipped: 0, missed: 0, failed: 0 } });
    const first = await runFinished(h.data[0].jid);
    expect(first.schedule_id).toBe(s.id);
    expect(first.jobs.map((j: Json) => String(j.client_id))).toEqual(['berlin-1']);

    // A client that joins the group after the schedule was made is in the next firing.
    const late = await connect('berlin-2', { City: 'berlin' });
    expect(await fireNext(s.id)).toBe(1);
    h = await history(s.id);
    const second = await runFinished(h.data[0].jid);
    expect(second.jobs.map((j: Json) => String(j.client_id)).sort()).toEqual(['berlin-1', 'berlin-2']);
    expect(late.runs.map((r) => r.command)).toEqual(['date']);

    h = await history(s.id);
    expect(h.data[0]).toMatchObject({
      outcome: 'started',
      reason: '',
      status: 'successful',
      client_count: 2,
      jobs: {
        successful: 2,
        failed: 0,
        running: 0,
        unknown: 0,
        queued: 0,
        expired: 0,
        cancelled: 0,
        skipped: 0,
      },
    });
    expect(h.data.map((f: Json) => String(f.scheduled_at))).toEqual([
      '2030-03-04T10:10:00.000Z',
      '2030-03-04T10:05:00.000Z',
    ]);
    const linked = await t.api.get(
      `/commands?filter[schedule_id]=${s.id}&fields[commands]=jid,schedule_id`,
      asOperator,
    );
    expect(linked.json.meta.count).toBe(2);
    const got = (await t.api.get(`/schedules/${s.id}`, asOperator)).json.data;
    expect(got.last_execution).toMatchObject({
      jid: h.data[0].jid,
      outcome: 'started',
      status: 'successful',
      client_count: 2,
      success_count: 2,
      summary: '2 of 2 clients successful',
    });
    expect(got.next_run_at).toBe('2030-03-04T10:15:00.000Z');
    await t.api.delete(`/schedules/${s.id}`, asOperator);
  });

  test('a schedule keeps the run options (queue_ttl, timeout_kill, batches) and each firing runs with them', async () => {
    const s = await create({
      name: 'staged',
      schedule: '*/5 * * * *',
      type: 'command',
      command: 'rollout',
      client_ids: ['berlin-1', 'paris-1'],
      queue_ttl: '1h',
      timeout_kill: true,
      batch_size: '50%',
      batch_delay: '0s',
      max_failures: 1,
    });
    expect(s).toMatchObject({
      queue_ttl: 3600,
      timeout_kill: true,
      batch_size: '50%',
      batch_delay: 0,
      max_failures: 1,
    });
    expect(await fireNext(s.id)).toBe(1);
    const run = await runFinished((await history(s.id)).data[0].jid);
    expect(run).toMatchObject({
      status: 'successful',
      queue_ttl: 3600,
      timeout_kill: true,
      batch_size: '50%',
      max_failures: 1,
      rollout: { batch_size: 1, batches_total: 2, batches_done: 2, stopped: null },
    });
    const plain = await create({
      name: 'plain',
      schedule: '0 3 * * *',
      type: 'command',
      command: 'x',
      client_ids: ['paris-1'],
    });
    expect(plain).not.toHaveProperty('batch_size');
    expect(plain).not.toHaveProperty('queue_ttl');
    await t.api.delete(`/schedules/${s.id}`, asOperator);
    await t.api.delete(`/schedules/${plain.id}`, asOperator);
  });

  test('a minute fires once, however often svcd ticks in it', async () => {
    const s = await create({
      name: 'once',
      schedule: '* * * * *',
      type: 'command',
      command: 'true',
      client_ids: ['paris-1'],
    });
    const before = firings.length;
    const { next_run_at } = (await t.api.get(`/schedules/${s.id}`, asOperator)).json.data;
    clock.at = Date.parse(next_run_at) + 10;
    const owned = await Promise.all([
      t.server.tickSchedules(),
      t.server.tickSchedules(),
      t.server.tickSchedules(),
    ]);
    clock.at += 30_000;
    owned.push(await t.server.tickSchedules());
    expect(owned.reduce((a, b) => a + b, 0)).toBe(1);
    expect(firings.slice(before).filter((f) => f.schedule_id === s.id)).toHaveLength(1);
    expect((await history(s.id)).meta.count).toBe(1);
    await runFinished((await history(s.id)).data[0].jid);
    await t.api.delete(`/schedules/${s.id}`, asOperator);
  });

  test('overlaps false skips a firing while the previous run still runs, and records it; overlaps true runs it', async () => {
    const paris = agents.find((a) => a.id === 'paris-1')!;
    let release!: (o: Output) => void;
    const held = new Promise<Output>((resolve) => (release = resolve));
    paris.behaviour = () => ({ result: held });
    try {
      const s = await create({
        name: 'no-overlap',
        schedule: '* * * * *',
        type: 'command',
        command: 'sleep 100',
        client_ids: ['paris-1'],
      });
      await fireNext(s.id);
      const [running] = (await history(s.id)).data;
      expect(running).toMatchObject({ outcome: 'started', status: 'running' });
      await fireNext(s.id);
      const h = await history(s.id);
      expect(h.data[0]).toMatchObject({
        outcome: 'skipped',
        jid: null,
        reason: `the previous run ${running.jid} is still running and overlaps is false`,
      });
      expect(h.meta.outcomes).toEqual({ started: 1, skipped: 1, missed: 0, failed: 0 });
      expect((await t.api.get(`/schedules/${s.id}`, asOperator)).json.data.last_execution).toMatchObject({
        outcome: 'skipped',
        status: 'skipped',
      });

      const body = {
        name: 'no-overlap',
        schedule: '* * * * *',
        type: 'command',
        command: 'sleep 100',
        client_ids: ['paris-1'],
        overlaps: true,
      };
      expect((await t.api.put(`/schedules/${s.id}`, body, asOperator)).status).toBe(200);
      await fireNext(s.id);
      expect((await history(s.id)).meta.outcomes).toEqual({ started: 2, skipped: 1, missed: 0, failed: 0 });
      release({});
      for (const f of (await history(s.id)).data) if (f.jid) await runFinished(f.jid);
      await t.api.delete(`/schedules/${s.id}`, asOperator);
    } finally {
      release({});
      paris.behaviour = succeed;
    }
  });

  test('a firing that cannot start its run (no client matches) is recorded as failed with why', async () => {
    const s = await create({
      name: 'nobody',
      schedule: '* * * * *',
      type: 'command',
      command: 'id',
      tags: { tags: ['no-such-tag'] },
    });
    await fireNext(s.id);
    const h = await history(s.id);
    expect(h.data[0]).toMatchObject({ outcome: 'failed', jid: null, status: null });
    expect(h.data[0].reason).toMatch(/No client matches the tags/);
    await t.api.delete(`/schedules/${s.id}`, asOperator);
  });

  test('a library script schedule runs the script as it is at each firing', async () => {
    const lib = await t.api.post(
      '/library/scripts',
      { name: 'sched-lib', script: 'echo one', interpreter: 'bash' },
      asOperator,
    );
    const s = await create({
      name: 'lib',
      schedule: '* * * * *',
      type: 'script',
      script_id: lib.json.data.id,
      client_ids: ['paris-1'],
    });
    expect(s).toMatchObject({
      script_id: lib.json.data.id,
      interpreter: null,
      timeout_sec: null,
      script: '',
    });
    const paris = agents.find((a) => a.id === 'paris-1')!;
    paris.runs.length = 0;
    await fireNext(s.id);
    await runFinished((await history(s.id)).data[0].jid);
    await t.api.put(
      `/library/scripts/${lib.json.data.id}`,
      { name: 'sched-lib', script: 'echo two', interpreter: 'bash', is_sudo: false, cwd: '' },
      asOperator,
    );
    await fireNext(s.id);
    await runFinished((await history(s.id)).data[0].jid);
    const scripts = paris.runs.map((r) => Buffer.from(r.script ?? '', 'base64').toString());
    expect(scripts).toEqual(['echo one', 'echo two']);
    expect(paris.runs.map((r) => r.interpreter)).toEqual(['bash', 'bash']);
    await t.api.delete(`/schedules/${s.id}`, asOperator);
  });

  test('a firing missed while svcd was down runs once at start within missed_run_window, else is recorded as missed', async () => {
    const s = await create({
      name: 'catch-up',
      schedule: '* * * * *',
      type: 'command',
      command: 'id',
      client_ids: ['paris-1'],
    });
    const due = Date.parse(s.next_run_at);
    await t.restart();
    // svcd was down for 30 minutes: 30 firings missed, one run.
    clock.at = due + 30 * MINUTE;
    expect(await t.server.tickSchedules()).toBe(1);
    let h = await history(s.id);
    expect(h.data).toHaveLength(1);
    expect(h.data[0]).toMatchObject({ outcome: 'started', scheduled_at: new Date(due).toISOString() });
    expect((await t.api.get(`/schedules/${s.id}`, asOperator)).json.data.next_run_at).toBe(
      new Date(due + 31 * MINUTE).toISOString(),
    );

    await t.restart();
    // Down for two hours: past the one-hour window.
    clock.at = due + 31 * MINUTE + 2 * 60 * MINUTE;
    expect(await t.server.tickSchedules()).toBe(1);
    h = await history(s.id);
    expect(h.data[0]).toMatchObject({ outcome: 'missed', jid: null });
    expect(h.data[0].reason).toMatch(/past the missed_run_window of 1\.0 h/);
    expect(h.meta.outcomes).toEqual({ started: 1, skipped: 0, missed: 1, failed: 0 });
    await t.api.delete(`/schedules/${s.id}`, asOperator);
  });
});
