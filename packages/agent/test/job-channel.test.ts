/**
 * Results travel from a real agent to an svcd stand-in over the real link (WebSocket → SSH), each on its own
 * output channel: streamed while the job runs, acknowledged, and offered again after a reconnect until svcd has
 * stored them. The stand-in first plays an svcd without `job.result` requests (so a short job's result goes on a
 * channel too), then one with them.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest';
import { Backoff } from '@svc/platform';
import { MAX_INLINE_RESULT_BYTES, type JobRun } from '@svc/protocol';
import { Agent } from '../src/connection/agent.js';
import { compileFilter, defaultExecSettings, type ExecSettings } from '../src/exec/exec-settings.js';
import { INLINE_WAIT_MS } from '../src/exec/result-request.js';
import { JobSvcd, joined } from './support/job-svcd.js';
import { captureLogs } from './support/log-capture.js';

const MiB = 1024 * 1024;
let root: string;
let svcd: JobSvcd;
const agents: Agent[] = [];
const pids = new Set<number>();

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-job-channel-'));
});

afterEach(async () => {
  await Promise.all(agents.splice(0).map((agent) => agent.stop()));
  await svcd.stop();
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  pids.clear();
});

afterAll(() => rm(root, { recursive: true, force: true }));

/** The spec's defaults, but with ';' and '>' allowed so tests can chain and redirect. */
const EXEC: ExecSettings = {
  ...defaultExecSettings(),
  filters: { allow: ['^/usr/bin/'].map(compileFilter), deny: [], order: ['allow', 'deny'] },
};

async function startAgent(exec: ExecSettings = EXEC, inlineWaitMs?: number): Promise<Agent> {
  const agent = new Agent(
    {
      serverUrl: svcd.url,
      credentials: svcd.credentials,
      clientId: `jobs-${randomUUID()}`,
      name: 'jobs',
      tags: [],
      labels: {},
      fingerprint: undefined,
      tunnelAllowed: [],
      keepaliveIntervalMs: 20_000,
      maxRetryIntervalMs: 1000,
      dataDir: join(root, 'data'),
      exec,
    },
    {
      logger: captureLogs().logger,
      backoff: new Backoff({ baseMs: 20, maxMs: 100 }),
      ...(inlineWaitMs === undefined ? {} : { inlineWaitMs }),
    },
  );
  agents.push(agent);
  void agent.run();
  await vi.waitFor(() => expect(svcd.connectedAgents).toBe(1), { timeout: 10_000 });
  return agent;
}

async function newSvcd(): Promise<JobSvcd> {
  svcd = new JobSvcd();
  await svcd.start();
  return svcd;
}

const job = (command: string, overrides: Partial<JobRun> = {}): JobRun => ({
  jid: randomUUID(),
  command,
  interpreter: '',
  cwd: '',
  is_sudo: false,
  timeout_sec: 60,
  ...overrides,
});

async function runJob(run: JobRun) {
  const reply = await svcd.run(run);
  pids.add(reply.pid);
  return reply;
}

/** Waits until svcd holds an acknowledged result for the job; returns that channel. */
async function storedResult(jid: string, timeout = 15_000) {
  return vi.waitFor(
    () => {
      const stored = svcd.outputsOf(jid).find((output) => output.acked);
      expect(stored).toBeDefined();
      return stored!;
    },
    { timeout },
  );
}

test('job.run replies with the pid and start time; the result arrives on its own channel and is acknowledged', async () => {
  await newSvcd();
  const agent = await startAgent();
  const run = job('/usr/bin/echo hello');
  const reply = await runJob(run);
  expect(reply.pid).toBeGreaterThan(0);
  expect(Number.isNaN(Date.parse(reply.started_at))).toBe(false);
  const output = await storedResult(run.jid);
  expect(output.header).toEqual({ jid: run.jid, replay: false });
  expect(joined(output.stdout).toString()).toBe('hello\n');
  expect(output.end).toMatchObject({
    status: 'successful',
    exit_code: 0,
    error: '',
    stdout_truncated: false,
  });
  await vi.waitFor(() => expect(agent.pendingResults).toBe(0));
  expect(svcd.outputsOf(run.jid)).toHaveLength(1);
});

test('a refused job is an error reply and opens no output channel', async () => {
  await newSvcd();
  await startAgent(defaultExecSettings());
  const run = job(`/usr/bin/touch ${join(root, 'never')}; /usr/bin/id`);
  await expect(svcd.run(run)).rejects.toMatchObject({
    code: 'refused',
    message: expect.stringMatching(/is not allowed by \[remote-commands\] deny/),
  });
  const disabled = await newSvcdAgentWith({ ...EXEC, commandsEnabled: false });
  await expect(disabled.run(job('/usr/bin/id'))).rejects.toMatchObject({ code: 'disabled' });
  expect(svcd.outputs).toEqual([]);
});

/** Replaces the svcd and agent of this test with new ones. */
async function newSvcdAgentWith(exec: ExecSettings): Promise<JobSvcd> {
  await Promise.all(agents.splice(0).map((agent) => agent.stop()));
  await svcd.stop();
  await newSvcd();
  await startAgent(exec);
  return svcd;
}

test('4 MiB on stdout and 4 MiB on stderr arrive complete and in order', async () => {
  await newSvcd();
  await startAgent();
  const out = randomBytes(4 * MiB);
  const err = randomBytes(4 * MiB);
  await writeFile(join(root, 'out.bin'), out);
  await writeFile(join(root, 'err.bin'), err);
  const run = job(`/usr/bin/cat ${join(root, 'out.bin')}; /usr/bin/cat ${join(root, 'err.bin')} >&2`);
  await runJob(run);
  const output = await storedResult(run.jid, 30_000);
  expect(joined(output.stdout).equals(out)).toBe(true);
  expect(joined(output.stderr).equals(err)).toBe(true);
  expect(output.end).toMatchObject({
    status: 'successful',
    stdout_truncated: false,
    stderr_truncated: false,
  });
});

test('output streams while the job runs', async () => {
  await newSvcd();
  await startAgent();
  const go = join(root, `go-${randomUUID()}`);
  const run = job(
    `/usr/bin/echo first; while [ ! -e ${go} ]; do /usr/bin/sleep 0.05; done; /usr/bin/echo second`,
  );
  await runJob(run);
  await vi.waitFor(
    () => expect(joined(svcd.outputsOf(run.jid)[0]?.stdout ?? []).toString()).toBe('first\n'),
    {
      timeout: 10_000,
    },
  );
  expect(svcd.outputsOf(run.jid)[0]?.end).toBeUndefined();
  await writeFile(go, '');
  const output = await storedResult(run.jid);
  expect(joined(output.stdout).toString()).toBe('first\nsecond\n');
});

test('at timeout_sec the end record says unknown while the process keeps running', async () => {
  await newSvcd();
  await startAgent();
  const run = job('/usr/bin/sleep 30', { timeout_sec: 1 });
  const { pid } = await runJob(run);
  const output = await storedResult(run.jid);
  expect(output.end).toMatchObject({ status: 'unknown', exit_code: null });
  expect(() => process.kill(pid, 0)).not.toThrow();
});

test('a result not acknowledged before the link drops is sent again with replay: true after the reconnect', async () => {
  await newSvcd();
  const agent = await startAgent();
  const out = randomBytes(MiB);
  await writeFile(join(root, 'replay.bin'), out);
  svcd.onEnd = (output) => (output.header?.replay ? 'ack' : 'drop the connection');
  const run = job(`/usr/bin/cat ${join(root, 'replay.bin')}`);
  await runJob(run);
  const stored = await storedResult(run.jid);
  const [first, second] = svcd.outputsOf(run.jid);
  expect(first).toMatchObject({ header: { jid: run.jid, replay: false }, acked: false });
  expect(joined(first?.stdout ?? []).equals(out)).toBe(true);
  expect(second).toBe(stored);
  expect(stored.header).toEqual({ jid: run.jid, replay: true });
  expect(joined(stored.stdout).equals(out)).toBe(true);
  expect(stored.end).toEqual(first?.end);
  await vi.waitFor(() => expect(agent.pendingResults).toBe(0));
});

test('a channel closed without the ack is offered again only after the next reconnect', async () => {
  await newSvcd();
  const agent = await startAgent();
  svcd.onEnd = () => 'close without ack';
  const run = job('/usr/bin/echo again');
  await runJob(run);
  await vi.waitFor(() => expect(svcd.outputsOf(run.jid)[0]?.closed).toBe(true));
  expect(agent.pendingResults).toBe(1);
  svcd.onEnd = () => 'ack';
  svcd.dropConnections();
  const stored = await storedResult(run.jid);
  expect(stored.header?.replay).toBe(true);
  expect(svcd.outputsOf(run.jid)).toHaveLength(2);
  await vi.waitFor(() => expect(agent.pendingResults).toBe(0));
});

test('a job that ends while svcd is down is delivered when svcd is back', async () => {
  await newSvcd();
  const agent = await startAgent();
  const go = join(root, `go-${randomUUID()}`);
  const run = job(
    `/usr/bin/echo before; while [ ! -e ${go} ]; do /usr/bin/sleep 0.05; done; /usr/bin/echo after`,
  );
  const { pid } = await runJob(run);
  await vi.waitFor(() =>
    expect(joined(svcd.outputsOf(run.jid)[0]?.stdout ?? []).toString()).toBe('before\n'),
  );
  await svcd.stop();
  await writeFile(go, '');
  // The job finishes while nobody listens; the agent keeps its result.
  await vi.waitFor(() => expect(() => process.kill(pid, 0)).toThrow(), { timeout: 10_000 });
  expect(agent.pendingResults).toBe(1);
  const restarted = svcd;
  restarted.outputs.length = 0;
  await restarted.start();
  const stored = await storedResult(run.jid);
  // The hello told svcd the agent still has this job, so svcd waits for the replay instead of ending it unknown.
  expect(restarted.hellos.at(-1)?.jobs).toEqual([run.jid]);
  expect(stored.header).toEqual({ jid: run.jid, replay: true });
  expect(joined(stored.stdout).toString()).toBe('before\nafter\n');
  expect(stored.end?.status).toBe('successful');
  await vi.waitFor(() => expect(agent.pendingResults).toBe(0));
  // Acknowledged results are no longer listed on the next hello.
  restarted.dropConnections();
  await vi.waitFor(() => expect(restarted.hellos.at(-1)?.jobs).toEqual([]), { timeout: 10_000 });
});

test("jobs do not see the agent's credentials or its malloc tuning in their environment", async () => {
  await newSvcd();
  const saved = { auth: process.env.SVC_AUTH, malloc: process.env.MALLOC_MMAP_THRESHOLD_ };
  process.env.SVC_AUTH = 'jobs-agent:agent-secret-in-env';
  process.env.MALLOC_MMAP_THRESHOLD_ = '131072';
  try {
    await startAgent();
    const run = job('/usr/bin/env');
    await runJob(run);
    const env = joined((await storedResult(run.jid)).stdout).toString();
    expect(env).toMatch(/^PATH=/m);
    expect(env).not.toContain('agent-secret-in-env');
    expect(env).not.toMatch(/^SVC_AUTH=/m);
    expect(env).not.toMatch(/^MALLOC_MMAP_THRESHOLD_=/m);
  } finally {
    if (saved.auth === undefined) delete process.env.SVC_AUTH;
    else process.env.SVC_AUTH = saved.auth;
    if (saved.malloc === undefined) delete process.env.MALLOC_MMAP_THRESHOLD_;
    else process.env.MALLOC_MMAP_THRESHOLD_ = saved.malloc;
  }
});

describe('with an svcd that takes results in one job.result request', () => {
  const decoded = (base64: string) => Buffer.from(base64, 'base64').toString();
  const resultsOf = (jid: string) => svcd.results.filter((result) => result.jid === jid);

  // A loaded machine may take longer than INLINE_WAIT_MS to run a short job; the tests of the request wait more.
  const SURE_WAIT_MS = 5_000;

  test('a job that ends at once goes in one request, acknowledged by its reply; no channel opens', async () => {
    (await newSvcd()).resultRequests = true;
    const agent = await startAgent(EXEC, SURE_WAIT_MS);
    const run = job('/usr/bin/echo hi; /usr/bin/echo oops >&2; exit 3');
    await runJob(run);
    await vi.waitFor(() => expect(resultsOf(run.jid)).toHaveLength(1));
    const [result] = resultsOf(run.jid);
    expect(result).toMatchObject({ jid: run.jid, replay: false, end: { status: 'failed', exit_code: 3 } });
    expect(decoded(result!.stdout)).toBe('hi\n');
    expect(decoded(result!.stderr)).toBe('oops\n');
    await vi.waitFor(() => expect(agent.pendingResults).toBe(0));
    expect(svcd.outputsOf(run.jid)).toEqual([]);
  });

  test('a job still running after the short wait streams on a channel, as does output too big for a request', async () => {
    (await newSvcd()).resultRequests = true;
    await startAgent();
    const big = randomBytes(MAX_INLINE_RESULT_BYTES + 1);
    await writeFile(join(root, 'big.bin'), big);
    const slow = job(`/usr/bin/echo a; /usr/bin/sleep ${(INLINE_WAIT_MS * 4) / 1000}; /usr/bin/echo b`);
    const large = job(`/usr/bin/cat ${join(root, 'big.bin')}`);
    await runJob(slow);
    await runJob(large);
    expect(joined((await storedResult(slow.jid)).stdout).toString()).toBe('a\nb\n');
    expect(joined((await storedResult(large.jid)).stdout).equals(big)).toBe(true);
    expect(svcd.results).toEqual([]);
  });

  test('an error reply keeps the result, which is offered again with replay: true after the next reconnect', async () => {
    (await newSvcd()).resultRequests = true;
    const agent = await startAgent(EXEC, SURE_WAIT_MS);
    svcd.onResult = () => 'error';
    const run = job('/usr/bin/echo again');
    await runJob(run);
    await vi.waitFor(() => expect(resultsOf(run.jid)).toHaveLength(1));
    expect(agent.pendingResults).toBe(1);
    svcd.onResult = () => 'ack';
    svcd.dropConnections();
    await vi.waitFor(() => expect(resultsOf(run.jid)).toHaveLength(2), { timeout: 10_000 });
    expect(resultsOf(run.jid)[1]).toMatchObject({ replay: true });
    expect(decoded(resultsOf(run.jid)[1]!.stdout)).toBe('again\n');
    await vi.waitFor(() => expect(agent.pendingResults).toBe(0));
    expect(svcd.outputsOf(run.jid)).toEqual([]);
  });
});
