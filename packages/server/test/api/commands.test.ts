import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { connectClient, openSubsystem, type TestAgent } from '../../../../test-support/agent-client.js';
import { ControlError } from '../../../platform/src/control-peer.js';
import { encodeJobData, encodeJobEnd, encodeJobHeader } from '../../../platform/src/job-frames.js';
import {
  JOB_OUTPUT_ACK,
  JOB_OUTPUT_SUBSYSTEM,
  type JobEnd,
  type JobRun,
} from '../../../protocol/src/index.js';
import { AUTH, clientRecord, startGatewayServer, waitFor, type GatewayServer } from '../gateway/helpers.js';
import { jobEnd } from './job-agents.js';

type Output = { stdout?: Buffer; stderr?: Buffer; end?: Partial<JobEnd> };

/** Sends a job result the way svc does: its own channel, header, frames, end; resolves with what svcd answered. */
async function sendResult(agent: TestAgent, jid: string, output: Output, replay = false): Promise<string> {
  const channel = await openSubsystem(agent.ssh, JOB_OUTPUT_SUBSYSTEM);
  let answer = '';
  channel.on('data', (chunk: Buffer) => (answer += chunk.toString()));
  const closed = new Promise<void>((resolve) => channel.once('close', () => resolve()));
  channel.write(encodeJobHeader({ jid, replay }));
  for (const frame of encodeJobData('stdout', output.stdout ?? Buffer.alloc(0))) channel.write(frame);
  for (const frame of encodeJobData('stderr', output.stderr ?? Buffer.alloc(0))) channel.write(frame);
  channel.write(encodeJobEnd(jobEnd(output.end)));
  await closed;
  return answer;
}

describe('commands and scripts on one client', () => {
  let t: GatewayServer;
  let agent: TestAgent;
  let other: TestAgent;
  /** What the agent answers to job.run; the runs it received. */
  let answer: (job: JobRun) => { pid: number; started_at: string } = () => ({
    pid: 4711,
    started_at: new Date().toISOString(),
  });
  const runs: JobRun[] = [];

  beforeAll(async () => {
    t = await startGatewayServer();
    agent = await connectClient(t.agent('agents-a'), { client_id: 'web-1', name: 'Web One' });
    agent.peer.on('job.run', (job) => {
      runs.push(job);
      return answer(job);
    });
    other = await connectClient(t.agent('agents-b'), { client_id: 'db-1' });
    const gone = await connectClient(t.agent('agents-b'), { client_id: 'old-box' });
    await gone.close();
    await waitFor(async () => (await clientRecord(t, 'old-box'))?.connection_state === 'disconnected');
  });
  afterAll(async () => {
    await agent?.close();
    await other?.close();
    await t?.stop();
  });

  const post = (path: string, body: unknown) => t.api.post(path, body, { auth: AUTH });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary JSON
  const job = async (clientId: string, jid: string): Promise<any> =>
    (await t.api.get(`/clients/${clientId}/commands/${jid}`, { auth: AUTH })).json.data;

  test('every route needs credentials', async () => {
    for (const [method, path] of [
      ['POST', '/clients/web-1/commands'],
      ['POST', '/clients/web-1/scripts'],
      ['GET', '/clients/web-1/commands'],
      ['GET', '/clients/web-1/commands/00000000-0000-4000-8000-000000000000'],
    ] as const) {
      const res = await t.api.request(
        method,
        path,
        method === 'POST' ? { body: { command: '/usr/bin/true' } } : {},
      );
      expect(res.status, `${method} ${path}`).toBe(401);
    }
    expect(runs).toEqual([]);
  });

  test('a command runs: job.run carries it, the job is running, then holds the result the agent sent', async () => {
    const res = await post('/clients/web-1/commands', { command: '/usr/bin/echo hello', timeout_sec: 5 });
    expect(res.status).toBe(200);
    const jid = res.json.data.jid as string;
    expect(runs.at(-1)).toEqual({
      jid,
      command: '/usr/bin/echo hello',
      interpreter: '',
      cwd: '',
      is_sudo: false,
      timeout_sec: 5,
    });
    expect(await job('web-1', jid)).toMatchObject({
      jid,
      status: 'running',
      client_id: 'web-1',
      client_name: 'Web One',
      command: '/usr/bin/echo hello',
      created_by: 'admin',
      pid: 4711,
      is_script: false,
      finished_at: null,
    });
    expect(await sendResult(agent, jid, { stdout: Buffer.from('hello\n') })).toBe(JOB_OUTPUT_ACK);
    const done = await job('web-1', jid);
    expect(done).toMatchObject({ status: 'successful', exit_code: 0, error: '' });
    expect(done.result).toEqual({
      stdout: 'hello\n',
      stderr: '',
      stdout_truncated: false,
      stderr_truncated: false,
    });
    expect(done.started_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  test('4 MiB on each stream arrive complete; bytes that are not UTF-8 become U+FFFD', async () => {
    const jid = (await post('/clients/web-1/commands', { command: '/usr/bin/big' })).json.data.jid as string;
    const stdout = Buffer.alloc(4 * 1024 * 1024, 'a');
    const stderr = Buffer.concat([Buffer.from([0xff, 0xfe, 0x41]), Buffer.alloc(4 * 1024 * 1024 - 3, 'b')]);
    await sendResult(agent, jid, { stdout, stderr, end: { stderr_truncated: true } });
    const done = await job('web-1', jid);
    expect(done.result.stdout).toBe(stdout.toString());
    expect(done.result.stderr.startsWith('\uFFFD\uFFFDA')).toBe(true);
    expect(done.result.stderr).toHaveLength(4 * 1024 * 1024);
    expect(done.result).toMatchObject({ stdout_truncated: false, stderr_truncated: true });
  });

  test('a refusal by the agent leaves a failed job with its reason; the result of a finished job is not taken twice', async () => {
    answer = () => {
      throw new ControlError(
        'refused',
        'command is not allowed by [remote-commands] deny: (\\||<|>|;|,|\\n|&)',
      );
    };
    try {
      const res = await post('/clients/web-1/commands', { command: '/usr/bin/ls; rm -rf /' });
      expect(res.status).toBe(200);
      const failed = await job('web-1', res.json.data.jid as string);
      expect(failed).toMatchObject({ status: 'failed', pid: null, started_at: null });
      expect(failed.error).toMatch(
        /^refused by the client: command is not allowed by \[remote-commands\] deny/,
      );
      expect(failed.finished_at).not.toBeNull();
      // A late result for it is acknowledged but changes nothing.
      await sendResult(agent, failed.jid as string, { stdout: Buffer.from('late') });
      expect((await job('web-1', failed.jid as string)).result.stdout).toBe('');
    } finally {
      answer = () => ({ pid: 4711, started_at: new Date().toISOString() });
    }
  });

  test("a result is taken only from the connection of the job's client", async () => {
    const jid = (await post('/clients/web-1/commands', { command: '/usr/bin/id' })).json.data.jid as string;
    expect(await sendResult(other, jid, { stdout: Buffer.from('forged') })).toBe(JOB_OUTPUT_ACK);
    expect(await job('web-1', jid)).toMatchObject({ status: 'running', result: { stdout: '' } });
    await sendResult(agent, jid, {
      stdout: Buffer.from('uid=1000'),
      end: { status: 'failed', exit_code: 1, error: 'exit status 1' },
    });
    expect(await job('web-1', jid)).toMatchObject({
      status: 'failed',
      exit_code: 1,
      error: 'exit status 1',
      result: { stdout: 'uid=1000' },
    });
  });

  test('a script is sent as base64 and its job shows the script text', async () => {
    const script = '#!/bin/sh\necho from a script\n';
    const res = await post('/clients/web-1/scripts', {
      script: Buffer.from(script).toString('base64'),
      interpreter: 'bash',
      cwd: '/tmp',
      is_sudo: true,
    });
    expect(res.status).toBe(200);
    const jid = res.json.data.jid as string;
    expect(runs.at(-1)).toMatchObject({
      jid,
      command: '',
      script: Buffer.from(script).toString('base64'),
      interpreter: 'bash',
      cwd: '/tmp',
      is_sudo: true,
      timeout_sec: 60,
    });
    expect(await job('web-1', jid)).toMatchObject({ is_script: true, command: script, is_sudo: true });
  });

  test('a library script runs by script_id with its stored text and options; options in the request win', async () => {
    const text = '#!/bin/sh\necho stored ✓\n';
    const stored = await post('/library/scripts', {
      name: 'one-by-id',
      script: text,
      interpreter: 'bash',
      cwd: '/var/tmp',
      timeout_sec: 12,
    });
    expect(stored.status).toBe(201);
    const id = stored.json.data.id as string;
    const res = await post('/clients/web-1/scripts', { script_id: id });
    expect(res.status, res.text).toBe(200);
    const jid = res.json.data.jid as string;
    expect(runs.at(-1)).toMatchObject({
      jid,
      command: '',
      script: Buffer.from(text).toString('base64'),
      interpreter: 'bash',
      cwd: '/var/tmp',
      is_sudo: false,
      timeout_sec: 12,
    });
    expect(await job('web-1', jid)).toMatchObject({ is_script: true, command: text, timeout_sec: 12 });

    const overridden = await post('/clients/web-1/scripts', {
      script_id: id,
      interpreter: '',
      cwd: '/',
      is_sudo: true,
      timeout_sec: 3,
    });
    expect(overridden.status).toBe(200);
    expect(runs.at(-1)).toMatchObject({ interpreter: '', cwd: '/', is_sudo: true, timeout_sec: 3 });

    const before = runs.length;
    const unknown = await post('/clients/web-1/scripts', {
      script_id: '00000000-0000-4000-8000-000000000000',
    });
    expect(unknown.status).toBe(404);
    expect(unknown.json.errors[0].code).toBe('ERR_LIBRARY_SCRIPT_NOT_FOUND');
    expect(unknown.json.errors[0].title).toMatch(/^script_id: no library script has the id/);
    for (const [body, title] of [
      [{ script_id: '' }, /^script_id: give the id of a library script/],
      [{ script_id: id, script: 'bHM=' }, /unknown field 'script'/],
      [{ script_id: id, timeout_sec: 0 }, /^timeout_sec: /],
    ] as const) {
      const bad = await post('/clients/web-1/scripts', body);
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(bad.json.errors[0].title).toMatch(title);
    }
    expect(runs.length).toBe(before);
  });

  test('an unknown client is 404 and a disconnected one 409; neither gets a job', async () => {
    const before = runs.length;
    const unknown = await post('/clients/nobody/commands', { command: '/usr/bin/true' });
    expect(unknown.status).toBe(404);
    expect(unknown.json.errors[0].code).toBe('ERR_CLIENT_NOT_FOUND');
    const offline = await post('/clients/old-box/commands', { command: '/usr/bin/true' });
    expect(offline.status).toBe(409);
    expect(offline.json.errors[0]).toMatchObject({ code: 'ERR_CLIENT_NOT_CONNECTED' });
    expect(offline.json.errors[0].title).toMatch(/not connected/);
    const script = await post('/clients/old-box/scripts', { script: Buffer.from('ls').toString('base64') });
    expect(script.status).toBe(409);
    expect(runs.length).toBe(before);
    const list = await t.api.get('/clients/old-box/commands', { auth: AUTH });
    expect(list.json).toEqual({ data: [], meta: { count: 0 } });
    expect((await t.api.get('/clients/nobody/commands', { auth: AUTH })).status).toBe(404);
    expect((await t.api.get('/clients/web-1/commands/not-a-job', { auth: AUTH })).status).toBe(404);
  });

  test('every bad body shape is a 400 naming the field', async () => {
    const cases: [string, unknown, RegExp][] = [
      ['/clients/web-1/commands', {}, /command/],
      ['/clients/web-1/commands', { command: '   ' }, /command: must not be empty/],
      ['/clients/web-1/commands', { command: 42 }, /command/],
      ['/clients/web-1/commands', { command: 'ls', timeout: 5 }, /unknown field 'timeout'/],
      ['/clients/web-1/commands', { command: 'ls', timeout_sec: 0 }, /timeout_sec/],
      ['/clients/web-1/commands', { command: 'ls', timeout_sec: 1.5 }, /timeout_sec/],
      ['/clients/web-1/commands', { command: 'ls', is_sudo: 'yes' }, /is_sudo/],
      ['/clients/web-1/commands', [], /expected object/],
      ['/clients/web-1/scripts', {}, /script/],
      ['/clients/web-1/scripts', { script: '' }, /script: must not be empty/],
      ['/clients/web-1/scripts', { script: 'not base64!' }, /script: must be valid base64/],
      [
        '/clients/web-1/scripts',
        { script: Buffer.from(' \n ').toString('base64') },
        /script: the decoded script is empty/,
      ],
      ['/clients/web-1/scripts', { script: 'bHM=', command: 'ls' }, /unknown field 'command'/],
      // A NUL byte cannot reach a process spawn: refused here, naming the field, not by the agent.
      ['/clients/web-1/commands', { command: 'ls', cwd: '/tmp\u0000x' }, /^cwd: must not contain NUL/],
      ['/clients/web-1/scripts', { script: 'bHM=', cwd: '\u0000' }, /^cwd: must not contain NUL/],
      [
        '/clients/web-1/commands',
        { command: 'ls', interpreter: 'sh\u0000' },
        /^interpreter: must not contain NUL/,
      ],
    ];
    const before = runs.length;
    for (const [path, body, title] of cases) {
      const res = await post(path, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.errors[0].title, JSON.stringify(body)).toMatch(title);
    }
    expect(runs.length).toBe(before);
  });

  test("the client's job list takes the list grammar", async () => {
    const all = await t.api.get('/clients/web-1/commands', { auth: AUTH });
    expect(all.json.meta.count).toBeGreaterThanOrEqual(5);
    const created = all.json.data.map((j: { created_at: string }) => j.created_at);
    expect([...created].sort().reverse()).toEqual(created);
    const failed = await t.api.get('/clients/web-1/commands?filter[status]=failed&fields[jobs]=jid,status', {
      auth: AUTH,
    });
    expect(failed.json.data.length).toBeGreaterThanOrEqual(2);
    for (const j of failed.json.data) expect(Object.keys(j).sort()).toEqual(['jid', 'status']);
    const bad = await t.api.get('/clients/web-1/commands?sort=pid', { auth: AUTH });
    expect(bad.status).toBe(400);
  });
});
