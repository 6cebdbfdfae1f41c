/**
 * Staged rollout (issue 27 §5): a multi-client run in batches with batch_delay and max_failures, against a real
 * svcd with agents speaking the real link; and a rerun that keeps every option of the run it repeats.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AUTH, startGatewayServer, waitFor, type GatewayServer } from '../gateway/helpers.js';
import { startJobAgent, succeed, type Behaviour, type JobAgent, type Output } from './job-agents.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary JSON
type Json = any;

const fails: Behaviour = () => ({ result: { end: { status: 'failed', exit_code: 1 } } });

describe('staged runs', () => {
  let t: GatewayServer;
  let agents: JobAgent[] = [];
  const ids = Array.from({ length: 20 }, (_, i) => `st-${String(i + 1).padStart(2, '0')}`);

  beforeAll(async () => {
    t = await startGatewayServer();
    for (const id of ids) agents.push(await startJobAgent(t, id, { tags: ['stage'] }));
  });
  afterAll(async () => {
    for (const a of agents) await a.agent.close();
    await t?.stop();
  });

  const agent = (id: string): JobAgent => {
    const found = agents.find((a) => a.id === id);
    if (!found) throw new Error(`no agent ${id}`);
    return found;
  };
  const reset = () => {
    for (const a of agents) {
      a.runs.length = 0;
      a.behaviour = succeed;
    }
  };
  const post = (path: string, body: unknown) => t.api.post(path, body, { auth: AUTH });
  const run = async (jid: string): Promise<Json> =>
    (await t.api.get(`/commands/${jid}`, { auth: AUTH })).json;
  const ended = (jid: string): Promise<Json> =>
    waitFor(
      async (): Promise<Json> => {
        const res = await run(jid);
        return res.data.status !== 'running' && res;
      },
      30_000,
      `run ${jid} to end`,
    );
  const statusOf = (res: Json): Record<string, string> =>
    Object.fromEntries(
      (res.data.jobs as { client_id: string; status: string }[]).map((j) => [j.client_id, j.status]),
    );

  test('20 clients in batches of 5: each batch waits for the one before; max_failures stops the rest, skipped', async () => {
    reset();
    // Batch 1 holds its results until the test lets them go; batch 2 fails on three clients.
    let release: (output: Output) => void = () => undefined;
    const held = new Promise<Output>((resolve) => (release = resolve));
    for (const id of ids.slice(0, 5)) agent(id).behaviour = () => ({ result: held });
    for (const id of ids.slice(5, 8)) agent(id).behaviour = fails;
    const res = await post('/commands', {
      command: 'deploy',
      client_ids: ids,
      execute_concurrently: true,
      batch_size: 5,
      max_failures: 3,
    });
    expect(res.status, res.text).toBe(200);
    const jid = res.json.data.jid as string;
    await waitFor(() => ids.slice(0, 5).every((id) => agent(id).runs.length === 1), 30_000, 'batch 1');
    const during = await run(jid);
    expect(during.data).toMatchObject({
      status: 'running',
      batch_size: 5,
      max_failures: 3,
      rollout: {
        batch_size: 5,
        batch_delay_sec: 0,
        max_failures: 3,
        batches_total: 4,
        batches_done: 0,
        failures: 0,
        stopped: null,
      },
    });
    // Batch 2 waits for batch 1's results.
    expect(ids.slice(5).map((id) => agent(id).runs.length)).toEqual(Array(15).fill(0));
    release({});

    const done = await ended(jid);
    const statuses = statusOf(done);
    for (const id of ids.slice(0, 5)) expect(statuses[id]).toBe('successful');
    for (const id of ids.slice(5, 8)) expect(statuses[id]).toBe('failed');
    for (const id of ids.slice(8, 10)) expect(statuses[id]).toBe('successful');
    for (const id of ids.slice(10)) expect(statuses[id]).toBe('skipped');
    expect(ids.slice(10).map((id) => agent(id).runs.length)).toEqual(Array(10).fill(0));
    expect(done.meta.jobs).toMatchObject({ successful: 7, failed: 3, skipped: 10, running: 0 });
    expect(done.data.status).toBe('skipped');
    expect(done.data.rollout).toMatchObject({
      batches_total: 4,
      batches_done: 2,
      next_batch_at: null,
      failures: 3,
      stopped: 'not started: max_failures reached (3 jobs failed, max_failures 3)',
    });
    const skipped = done.data.jobs.find((j: Json) => j.client_id === ids[19]);
    expect(skipped).toMatchObject({ status: 'skipped', error: done.data.rollout.stopped });

    // rerun?only=failed takes the failed and the skipped clients, with the same batches.
    reset();
    const again = await post(`/commands/${jid}/rerun?only=failed`, undefined);
    expect(again.status, again.text).toBe(200);
    const second = await ended(again.json.data.jid as string);
    expect(second.data.client_ids).toEqual([...ids.slice(5, 8), ...ids.slice(10)]);
    expect(second.data).toMatchObject({ status: 'successful', batch_size: 5, max_failures: 3 });
    expect(second.data.rollout).toMatchObject({ batches_total: 3, batches_done: 3, stopped: null });
  });

  test('a sequential staged run waits batch_delay between batches and shows when the next starts', async () => {
    reset();
    const targets = ids.slice(0, 4);
    const firstRunAt: Record<string, number> = {};
    for (const id of targets)
      agent(id).behaviour = () => {
        firstRunAt[id] ??= Date.now();
        return { result: {} };
      };
    const res = await post('/commands', {
      command: 'step',
      client_ids: targets,
      batch_size: '50%',
      batch_delay: 1,
    });
    expect(res.status, res.text).toBe(200);
    const jid = res.json.data.jid as string;
    const waiting: Json = await waitFor(async (): Promise<Json> => {
      const r = await run(jid);
      return r.data.rollout.batches_done === 1 && r;
    }, 30_000);
    expect(waiting.data.rollout).toMatchObject({ batch_size: 2, batch_delay_sec: 1, batches_total: 2 });
    const nextAt = Date.parse(waiting.data.rollout.next_batch_at as string);
    const done = await ended(jid);
    expect(done.data.status).toBe('successful');
    expect(done.data.rollout).toMatchObject({ batches_done: 2, next_batch_at: null, stopped: null });
    // Batch 2 started no earlier than announced, which is batch_delay after batch 1 ended.
    const batch1End = Math.max(...done.data.jobs.slice(0, 2).map((j: Json) => Date.parse(j.finished_at)));
    expect(nextAt - batch1End).toBeGreaterThanOrEqual(900);
    expect(Math.min(firstRunAt[targets[2]!]!, firstRunAt[targets[3]!]!)).toBeGreaterThanOrEqual(nextAt - 5);
    expect(targets.map((id) => agent(id).runs.length)).toEqual([1, 1, 1, 1]);
  });

  test('bad staged-run options are 400 with the field named; nothing runs', async () => {
    reset();
    const base = { command: 'x', client_ids: [ids[0]] };
    const cases: [Record<string, unknown>, string][] = [
      [{ batch_size: 0 }, 'batch_size'],
      [{ batch_size: 2.5 }, 'batch_size'],
      [{ batch_size: '0%' }, 'batch_size'],
      [{ batch_size: '101%' }, 'batch_size'],
      [{ batch_size: 'half' }, 'batch_size'],
      [{ batch_size: 5, batch_delay: -1 }, 'batch_delay'],
      [{ batch_size: 5, batch_delay: '5 minutes' }, 'batch_delay'],
      [{ batch_size: 5, batch_delay: '8d' }, 'batch_delay'],
      [{ batch_size: 5, max_failures: 0 }, 'max_failures'],
      [{ batch_size: 5, max_failures: '150%' }, 'max_failures'],
      [{ max_failures: 1 }, 'max_failures'],
      [{ batch_delay: '10s' }, 'batch_delay'],
    ];
    for (const [options, field] of cases) {
      const res = await post('/commands', { ...base, ...options });
      expect(res.status, JSON.stringify(options)).toBe(400);
      expect(JSON.stringify(res.json.errors), JSON.stringify(options)).toContain(field);
    }
    const script = await post('/scripts', { script: 'bHM=', client_ids: [ids[0]], max_failures: '10%' });
    expect(script.status).toBe(400);
    const schedule = await post('/schedules', {
      name: 'staged',
      schedule: '* * * * *',
      type: 'command',
      command: 'x',
      client_ids: [ids[0]],
      batch_delay: '1m',
    });
    expect(schedule.status).toBe(400);
    expect(JSON.stringify(schedule.json.errors)).toContain('needs batch_size');
    expect(agents.every((a) => a.runs.length === 0)).toBe(true);
  });

  test('rerun?only=failed carries queue_ttl, timeout_kill and the batch options', async () => {
    reset();
    const targets = ids.slice(0, 3);
    agent(targets[1]!).behaviour = fails;
    agent(targets[2]!).behaviour = fails;
    const res = await post('/scripts', {
      script: Buffer.from('echo hi\n').toString('base64'),
      client_ids: targets,
      execute_concurrently: true,
      timeout_sec: 30,
      queue_ttl: '15m',
      timeout_kill: true,
      batch_size: 1,
      batch_delay: 0,
      max_failures: '100%',
    });
    expect(res.status, res.text).toBe(200);
    const first = await ended(res.json.data.jid as string);
    expect(first.data).toMatchObject({ status: 'failed', queue_ttl: 900, timeout_kill: true });
    expect(agent(targets[1]!).runs[0]).toMatchObject({ timeout_kill: true });

    // One failed client is offline now: with the run's queue_ttl it is queued, not failed.
    reset();
    const offline = agent(targets[2]!);
    await offline.agent.close();
    agents = agents.filter((a) => a !== offline);
    await waitFor(async () => {
      const c = await t.api.get(`/clients/${offline.id}`, { auth: AUTH });
      return c.json.data?.connection_state === 'disconnected';
    }, 30_000);
    const again = await post(`/commands/${first.data.jid}/rerun?only=failed`, undefined);
    expect(again.status, again.text).toBe(200);
    const second: Json = await waitFor(async (): Promise<Json> => {
      const r = await run(again.json.data.jid as string);
      return r.data.jobs.length === 2 && r.data.jobs.every((j: Json) => j.status !== 'running') && r;
    }, 30_000);
    expect(second.data).toMatchObject({
      is_script: true,
      command: 'echo hi\n',
      timeout_sec: 30,
      concurrent: true,
      queue_ttl: 900,
      timeout_kill: true,
      batch_size: 1,
      batch_delay: 0,
      max_failures: '100%',
      client_ids: [targets[1], targets[2]],
    });
    expect(statusOf(second)).toEqual({ [targets[1]!]: 'successful', [targets[2]!]: 'queued' });
    const queued = second.data.jobs.find((j: Json) => j.client_id === targets[2]);
    expect(Date.parse(queued.queue_expires_at) - Date.parse(queued.created_at)).toBe(900_000);
    expect(agent(targets[1]!).runs[0]).toMatchObject({ timeout_kill: true, timeout_sec: 30 });
    // The queued child is not this test's business any more.
    expect((await t.api.delete(`/commands/${second.data.jid}`, { auth: AUTH })).status).toBe(202);
  });

  test('svcd stopping between batches ends the rest skipped, saying so; a rerun continues it', async () => {
    reset();
    const targets = ids.slice(0, 4);
    const res = await post('/commands', {
      command: 'slow-rollout',
      client_ids: targets,
      batch_size: 2,
      batch_delay: '1h',
    });
    const jid = res.json.data.jid as string;
    await waitFor(async () => (await run(jid)).data.rollout.batches_done === 1, 30_000);
    for (const a of agents) await a.agent.close();
    agents = [];
    await t.restart();
    const after = await run(jid);
    expect(after.data.status).toBe('skipped');
    expect(statusOf(after)).toEqual({
      [targets[0]!]: 'successful',
      [targets[1]!]: 'successful',
      [targets[2]!]: 'skipped',
      [targets[3]!]: 'skipped',
    });
    expect(after.data.rollout).toMatchObject({ batches_done: 1, next_batch_at: null });
    expect(after.data.rollout.stopped).toMatch(/svcd stopped during the staged run/);

    for (const id of targets) agents.push(await startJobAgent(t, id, { tags: ['stage'] }));
    const again = await post(`/commands/${jid}/rerun?only=failed`, undefined);
    const continued = await ended(again.json.data.jid as string);
    expect(continued.data.client_ids).toEqual(targets.slice(2));
    expect(continued.data.status).toBe('successful');
    expect(continued.data.batch_delay).toBe(3600);
  });
});
