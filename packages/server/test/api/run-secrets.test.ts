/**
 * Issue 27 §4 through svcd and protocol-level agents: what job.run carries for a run with `env`, svcd's own
 * redaction of output an agent sent unredacted (split across frames), the refusal of an agent that does not list
 * the job.env capability, and a schedule whose vault reference is resolved at each firing as its owner.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { JOB_ENV_CAPABILITY } from '../../../protocol/src/index.js';
import type { StoredFiring } from '../../src/core/schedules/ports.js';
import { ADMIN, OPERATOR, startTestServer, type TestServer } from '../../../../test-support/server.js';
import { waitFor } from '../gateway/helpers.js';
import { jobEnd, openOutput, agentsOf, startJobAgent, type JobAgent } from './job-agents.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary JSON
type Json = any;

const asAdmin = { auth: { basic: [ADMIN.username, ADMIN.password] as [string, string] } };
const asOperator = { auth: { basic: [OPERATOR.username, OPERATOR.password] as [string, string] } };
const SECRET = 'pa55-w0rd-0f-the-db';
const clock = { at: Date.parse('2030-03-04T10:00:30Z'), now: () => new Date(clock.at) };

describe('vault secrets in runs', () => {
  let t: TestServer;
  let capable: JobAgent;
  let old: JobAgent;
  const firings: StoredFiring[] = [];

  const gateway = () => agentsOf(t);

  beforeAll(async () => {
    t = await startTestServer({
      store: 'database:sqlite',
      clientAuth: { source: 'file', entries: { 'agents-a': 'secret-a-123' } },
      sections: { schedules: { missed_run_window: '1h', catch_up_delay: 0 } },
      tuning: { scheduleClock: clock, onScheduleFiring: (f) => firings.push(f) },
    });
    capable = await startJobAgent(gateway(), 'new-1', { capabilities: [JOB_ENV_CAPABILITY] });
    old = await startJobAgent(gateway(), 'old-1');
    expect((await t.api.post('/vault-admin/init', { password: 'vault-pw-1' }, asAdmin)).status).toBe(201);
    for (const entry of [
      { key: 'db-prod', value: SECRET, type: 'secret' },
      { key: 'db-prod', value: 'the-new-1-own-value', type: 'secret', client_id: 'new-1' },
    ])
      expect((await t.api.post('/vault', entry, asAdmin)).status).toBe(201);
  });
  afterAll(async () => {
    for (const a of [capable, old]) await a?.agent.close();
    await t?.stop();
  });

  const jobOf = (clientId: string, jid: string) =>
    waitFor(
      async (): Promise<Json> => {
        const job = (await t.api.get(`/clients/${clientId}/commands/${jid}`, asAdmin)).json.data;
        return job.status !== 'running' && job;
      },
      10_000,
      `job ${jid} to end`,
    );
  const runOf = (jid: string) =>
    waitFor(
      async (): Promise<Json> => {
        const run = (await t.api.get(`/commands/${jid}`, asAdmin)).json.data;
        return run.status !== 'running' && run;
      },
      10_000,
      `run ${jid} to end`,
    );

  test('job.run carries the values and which are secrets; svcd redacts output the agent did not', async () => {
    let write: Promise<void> = Promise.resolve();
    capable.behaviour = (job) => {
      // An agent that redacts nothing, with the value split over two frames.
      write = openOutput(capable.agent, job.jid).then(async (out) => {
        const value = job.env?.['DB_PASS'] ?? '';
        out.write('stdout', Buffer.from(`got ${value.slice(0, 5)}`));
        out.write('stdout', Buffer.from(`${value.slice(5)} twice ${value}\n`));
        out.write('stderr', Buffer.from(value.slice(0, 3)));
        out.write('stderr', Buffer.from(value.slice(3)));
        await out.end();
      });
      return { result: new Promise<never>(() => undefined) };
    };
    const res = await t.api.post(
      '/clients/new-1/commands',
      { command: 'run it', env: { DB_PASS: { vault: 'db-prod' }, MODE: 'fast' } },
      asAdmin,
    );
    expect(res.status, res.text).toBe(200);
    const run = capable.runs.at(-1);
    // The client's own entry wins over the shared one for a run on that client.
    expect(run?.env).toEqual({ DB_PASS: 'the-new-1-own-value', MODE: 'fast' });
    expect(run?.redact).toEqual({ DB_PASS: 'db-prod' });
    expect(run?.command).toBe('run it');
    await write;
    const job = await jobOf('new-1', res.json.data.jid);
    expect(job.result.stdout).toBe('got [redacted:db-prod] twice [redacted:db-prod]\n');
    expect(job.result.stderr).toBe('[redacted:db-prod]');
  });

  test('a whole result in one job.result request is redacted too', async () => {
    let sent: Promise<unknown> = Promise.resolve();
    capable.behaviour = (job) => {
      const value = job.env?.['DB_PASS'] ?? '';
      sent = capable.agent.peer.request('job.result', {
        jid: job.jid,
        replay: false,
        stdout: Buffer.from(`inline ${value}\n`).toString('base64'),
        stderr: Buffer.from(value).toString('base64'),
        end: jobEnd(),
      });
      return { result: new Promise<never>(() => undefined) };
    };
    const res = await t.api.post(
      '/clients/new-1/commands',
      { command: 'inline', env: { DB_PASS: { vault: 'db-prod' } } },
      asAdmin,
    );
    expect(res.status, res.text).toBe(200);
    await sent;
    const job = await jobOf('new-1', res.json.data.jid);
    expect(job.result).toMatchObject({ stdout: 'inline [redacted:db-prod]\n', stderr: '[redacted:db-prod]' });
  });

  test('an agent that does not list job.env gets no job: its child fails saying why', async () => {
    capable.behaviour = () => ({ result: {} });
    const before = old.runs.length;
    const res = await t.api.post(
      '/commands',
      {
        command: 'uses env',
        client_ids: ['new-1', 'old-1'],
        execute_concurrently: true,
        env: { DB_PASS: { vault: 'db-prod' } },
      },
      asAdmin,
    );
    expect(res.status, res.text).toBe(200);
    const run = await runOf(res.json.data.jid);
    const byClient: Json = Object.fromEntries(run.jobs.map((j: Json): [string, Json] => [j.client_id, j]));
    expect(byClient['new-1'].status).toBe('successful');
    expect(byClient['old-1'].status).toBe('failed');
    expect(byClient['old-1'].error).toMatch(/too old to pass environment variables/);
    expect(old.runs.length).toBe(before);
    // A run on many clients uses the shared entry.
    expect(capable.runs.at(-1)?.env).toEqual({ DB_PASS: SECRET });
    // Without env the old agent runs jobs as before.
    const plain = await t.api.post('/clients/old-1/commands', { command: 'no env' }, asAdmin);
    expect((await jobOf('old-1', plain.json.data.jid)).status).toBe('successful');
  });

  test('a schedule stores the reference only and resolves it at each firing as its owner', async () => {
    capable.behaviour = () => ({ result: {} });
    const created = await t.api.post(
      '/schedules',
      {
        name: 'with secret',
        schedule: '* * * * *',
        type: 'command',
        command: 'nightly',
        client_ids: ['new-1'],
        env: { DB_PASS: { vault: 'db-prod' } },
      },
      asOperator,
    );
    expect(created.status, created.text).toBe(201);
    const schedule = created.json.data;
    expect(schedule.env).toEqual({ DB_PASS: { vault: 'db-prod' } });
    expect(JSON.stringify(schedule)).not.toContain(SECRET);

    const fire = async () => {
      const { next_run_at } = (await t.api.get(`/schedules/${schedule.id}`, asOperator)).json.data;
      clock.at = Date.parse(next_run_at) + 100;
      await t.server.tickSchedules();
      return firings.filter((f) => f.schedule_id === schedule.id).at(-1) as StoredFiring;
    };
    const first = await fire();
    expect(first.outcome).toBe('started');
    await runOf(first.jid ?? '');
    expect(capable.runs.at(-1)).toMatchObject({ command: 'nightly', env: { DB_PASS: SECRET } });

    // Locked at the next firing: the firing fails saying so, nothing runs.
    const sent = capable.runs.length;
    expect((await t.api.delete('/vault-admin/sesame', asAdmin)).status).toBe(204);
    const locked = await fire();
    expect(locked).toMatchObject({ outcome: 'failed', jid: null });
    expect(locked.reason).toMatch(/vault is locked/i);
    expect(capable.runs.length).toBe(sent);
    expect((await t.api.post('/vault-admin/sesame', { password: 'vault-pw-1' }, asAdmin)).status).toBe(201);

    // The owner's rights apply: an entry limited to a group the operator is not in refuses the firing.
    const team = await t.api.post(
      '/vault',
      { key: 'team-key', value: 'team-value', type: 'secret', required_group: 'secret-team' },
      asAdmin,
    );
    expect(team.status).toBe(201);
    const put = await t.api.put(
      `/schedules/${schedule.id}`,
      {
        name: 'with secret',
        schedule: '* * * * *',
        type: 'command',
        command: 'nightly',
        client_ids: ['new-1'],
        env: { T: { vault: 'team-key' } },
      },
      asOperator,
    );
    expect(put.status, put.text).toBe(200);
    const refused = await fire();
    expect(refused).toMatchObject({ outcome: 'failed', jid: null });
    expect(refused.reason).toMatch(/secret-team/);
  });
});
