/**
 * DELETE of a job against protocol-level agents (test-support/agent-client.ts): an agent that does not know
 * `job.cancel` (older than cancel) gets a clear 409 and the job keeps running; an agent that answers `running:
 * false` (the job ended there) is a 409 too; an agent that cancels gets 202 and its `cancelled` result is stored;
 * a queue_ttl that is not a duration is a 400 naming the field.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { connectClient, type TestAgent } from '../../../../test-support/agent-client.js';
import { AUTH, startGatewayServer, type GatewayServer } from '../gateway/helpers.js';
import { jobEnd } from './job-agents.js';

describe('cancel through the agent link', () => {
  let t: GatewayServer;
  let old: TestAgent;
  let current: TestAgent;
  const asked: string[] = [];

  beforeAll(async () => {
    t = await startGatewayServer();
    old = await connectClient(t.agent('agents-a'), { client_id: 'old-1' });
    old.peer.on('job.run', () => ({ pid: 4711, started_at: new Date().toISOString() }));
    current = await connectClient(t.agent('agents-b'), { client_id: 'new-1' });
    current.peer.on('job.run', () => ({ pid: 4712, started_at: new Date().toISOString() }));
    current.peer.on('job.cancel', ({ jid }) => {
      asked.push(jid);
      return { running: !jid.endsWith('0') };
    });
  });
  afterAll(async () => {
    await old?.close();
    await current?.close();
    await t?.stop();
  });

  const start = async (clientId: string, body: Record<string, unknown> = {}) => {
    const res = await t.api.post(
      `/clients/${clientId}/commands`,
      { command: '/usr/bin/id', ...body },
      { auth: AUTH },
    );
    expect(res.status, res.text).toBe(200);
    return res.json.data.jid as string;
  };

  test('an agent too old to cancel: 409 ERR_JOB_NOT_CANCELLABLE saying so; the job stays running', async () => {
    const jid = await start('old-1');
    const res = await t.api.delete(`/clients/old-1/commands/${jid}`, { auth: AUTH });
    expect(res.status).toBe(409);
    expect(res.json.errors[0].code).toBe('ERR_JOB_NOT_CANCELLABLE');
    expect(res.json.errors[0].detail + res.json.errors[0].title).toMatch(/too old to cancel/);
    const job = await t.api.get(`/clients/old-1/commands/${jid}`, { auth: AUTH });
    expect(job.json.data.status).toBe('running');
  });

  test('an agent that cancels: 202 cancelling, then its cancelled result is stored with the output so far', async () => {
    let jid = await start('new-1');
    while (jid.endsWith('0')) jid = await start('new-1');
    const res = await t.api.delete(`/clients/new-1/commands/${jid}`, { auth: AUTH });
    expect(res.status, res.text).toBe(202);
    expect(res.json.data).toEqual({ jid, status: 'cancelling' });
    expect(asked).toContain(jid);
    await current.peer.request('job.result', {
      jid,
      replay: false,
      stdout: Buffer.from('so far\n').toString('base64'),
      stderr: '',
      end: jobEnd({ status: 'cancelled', exit_code: null, error: 'cancelled: svcd asked to stop it' }),
    });
    const job = await t.api.get(`/clients/new-1/commands/${jid}`, { auth: AUTH });
    expect(job.json.data).toMatchObject({ status: 'cancelled', result: { stdout: 'so far\n' } });
  });

  test('a job no longer running on the agent: 409 ERR_JOB_ENDED', async () => {
    let jid = await start('new-1');
    while (!jid.endsWith('0')) jid = await start('new-1');
    const res = await t.api.delete(`/clients/new-1/commands/${jid}`, { auth: AUTH });
    expect(res.status).toBe(409);
    expect(res.json.errors[0].code).toBe('ERR_JOB_ENDED');
  });

  test('queue_ttl must be a duration or seconds; timeout_kill a boolean', async () => {
    for (const bad of [
      { queue_ttl: '10 minutes' },
      { queue_ttl: 0 },
      { queue_ttl: '32d' },
      { timeout_kill: 'yes' },
    ]) {
      const res = await t.api.post('/clients/new-1/commands', { command: 'id', ...bad }, { auth: AUTH });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.json.errors[0].detail + res.json.errors[0].title).toMatch(/queue_ttl|timeout_kill/);
    }
  });
});
