/**
 * A finished job's result in one `job.result` control request (notes in @svc/protocol jobs.ts, step 4): stored
 * from the job's own client, acknowledged by the reply, taken once, and refused in shape like any control payload.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { connectClient, type TestAgent } from '../../../../test-support/agent-client.js';
import { ControlError } from '../../../platform/src/control-peer.js';
import { CONTROL_ERRORS, MAX_INLINE_RESULT_BYTES, type JobResult } from '../../../protocol/src/index.js';
import { AUTH, startGatewayServer, type GatewayServer } from '../gateway/helpers.js';
import { jobEnd } from './job-agents.js';

const result = (jid: string, stdout: string, overrides: Partial<JobResult> = {}): JobResult => ({
  jid,
  replay: false,
  stdout: Buffer.from(stdout).toString('base64'),
  stderr: '',
  end: jobEnd(),
  ...overrides,
});

describe('job results in one control request', () => {
  let t: GatewayServer;
  let agent: TestAgent;
  let other: TestAgent;

  beforeAll(async () => {
    t = await startGatewayServer();
    agent = await connectClient(t.agent('agents-a'), { client_id: 'web-1', name: 'Web One' });
    agent.peer.on('job.run', () => ({ pid: 4711, started_at: new Date().toISOString() }));
    other = await connectClient(t.agent('agents-b'), { client_id: 'db-1' });
  });
  afterAll(async () => {
    await agent?.close();
    await other?.close();
    await t?.stop();
  });

  const start = async (): Promise<string> =>
    (await t.api.post('/clients/web-1/commands', { command: '/usr/bin/id' }, { auth: AUTH })).json.data
      .jid as string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary JSON
  const job = async (jid: string): Promise<any> =>
    (await t.api.get(`/clients/web-1/commands/${jid}`, { auth: AUTH })).json.data;

  test('the reply comes once the result is stored: output bytes, end record and all', async () => {
    const jid = await start();
    const stderr = Buffer.from([0x77, 0xff, 0x0a]);
    const reply = await agent.peer.request(
      'job.result',
      result(jid, 'uid=1000\n', {
        stderr: stderr.toString('base64'),
        end: jobEnd({ status: 'failed', exit_code: 3, error: 'exit status 3', stdout_truncated: true }),
      }),
    );
    expect(reply).toEqual({});
    expect(await job(jid)).toMatchObject({
      status: 'failed',
      exit_code: 3,
      error: 'exit status 3',
      pid: 4711,
      result: {
        stdout: 'uid=1000\n',
        stderr: 'w\uFFFD\n',
        stdout_truncated: true,
        stderr_truncated: false,
      },
    });
  });

  test('a second result for a finished job is acknowledged and changes nothing', async () => {
    const jid = await start();
    await agent.peer.request('job.result', result(jid, 'first'));
    expect(await agent.peer.request('job.result', result(jid, 'second', { replay: true }))).toEqual({});
    expect((await job(jid)).result.stdout).toBe('first');
  });

  test("a result is taken only from the connection of the job's client", async () => {
    const jid = await start();
    expect(await other.peer.request('job.result', result(jid, 'forged'))).toEqual({});
    expect(await job(jid)).toMatchObject({ status: 'running', result: { stdout: '' } });
    await agent.peer.request('job.result', result(jid, 'real'));
    expect(await job(jid)).toMatchObject({ status: 'successful', result: { stdout: 'real' } });
  });

  test('output that is not base64 or too big for a request is refused, and the job stays running', async () => {
    const jid = await start();
    for (const stdout of ['not base64!', Buffer.alloc(MAX_INLINE_RESULT_BYTES + 3).toString('base64')]) {
      const refused = await agent.peer
        .request('job.result', { ...result(jid, ''), stdout })
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ControlError);
      expect((refused as ControlError).code).toBe(CONTROL_ERRORS.invalidPayload);
    }
    expect((await job(jid)).status).toBe('running');
  });
});
