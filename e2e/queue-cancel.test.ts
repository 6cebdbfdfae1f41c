/**
 * Issue 27 §1–2 with real svcd and svc processes: jobs queued for stopped agents (queue_ttl) run when the agent
 * starts, expire when it does not, and survive an svcd restart; cancel kills a job's whole process tree (proved
 * from /proc), cancels queued jobs and whole runs; timeout_kill kills at the timeout.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  startSvcdProcess,
  svcdFingerprint,
  writeAdminUserFile,
  writeSvcdConfig,
} from '../test-support/e2e-setup.js';
import { createApiClient, type ApiClient } from '../test-support/api-client.js';
import { freePort, type RunningProcess } from '../test-support/process.js';
import { QUICK_RECONNECT, SHELL_FRIENDLY_FILTERS, startE2eAgent } from '../test-support/e2e-agent.js';

const ADMIN = { basic: ['admin', 'admin-secret-1'] as [string, string] };

interface JobView {
  jid: string;
  client_id: string;
  status: string;
  error: string;
  pid: number | null;
  queue_expires_at?: string;
  result: { stdout: string };
}
interface RunView {
  status: string;
  jobs: JobView[];
}

let dir: string;
let configPath: string;
let api: ApiClient;
let svcd: RunningProcess | undefined;
let clientUrl: string;
let fingerprint: string;
const agents = new Map<string, RunningProcess>();

async function startAgent(id: string): Promise<RunningProcess> {
  const agent = await startE2eAgent({
    dir,
    server: clientUrl,
    fingerprint,
    id,
    lines: [...SHELL_FRIENDLY_FILTERS, ...QUICK_RECONNECT],
  });
  agents.set(id, agent);
  return agent;
}

async function stopAgent(id: string): Promise<void> {
  await agents.get(id)?.stop();
  agents.delete(id);
  await until(`${id} to be disconnected`, async () => {
    const res = await api.get(`/clients/${id}`, { auth: ADMIN });
    return res.json.data?.connection_state === 'disconnected' ? true : undefined;
  });
}

async function connected(id: string): Promise<void> {
  await until(`${id} to be connected`, async () => {
    const res = await api.get(`/clients/${id}`, { auth: ADMIN });
    return res.json.data?.connection_state === 'connected' ? true : undefined;
  });
}

/** Polls (bounded) until `check` returns a value: the REST API offers no event for a job's end. */
async function until<T>(what: string, check: () => Promise<T | undefined>, withinMs = 30_000): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function job(clientId: string, jid: string): Promise<JobView> {
  const res = await api.get(`/clients/${clientId}/commands/${jid}`, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data as JobView;
}

const jobIn = (clientId: string, jid: string, statuses: string[]) =>
  until(`job ${jid} to be ${statuses.join('|')}`, async () => {
    const view = await job(clientId, jid);
    return statuses.includes(view.status) ? view : undefined;
  });

async function run(jid: string): Promise<RunView> {
  const res = await api.get(`/commands/${jid}`, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data as RunView;
}

async function command(clientId: string, body: Record<string, unknown>): Promise<string> {
  const res = await api.post(`/clients/${clientId}/commands`, body, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data.jid as string;
}

/** Every live process of the process group `pgid`, from /proc (zombies count as gone). */
async function groupMembers(pgid: number): Promise<number[]> {
  const members: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] !== 'Z' && Number(fields[2]) === pgid) members.push(Number(entry));
  }
  return members;
}

/** A job whose shell starts a child and a grandchild that would each sleep for 10 minutes. */
const TREE = "echo started; sh -c 'sleep 600 & sleep 600'";

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-queue-cancel-'));
  const [apiPort, clientPort] = [await freePort(), await freePort()];
  await writeAdminUserFile(dir);
  configPath = await writeSvcdConfig(dir, {
    clientPort,
    apiPort,
    keySeed: 'e2e-queue-cancel-seed',
    server: ['auth = "agent:agent-password-1"'],
  });
  svcd = await startSvcdProcess(configPath);
  api = createApiClient(`http://127.0.0.1:${apiPort}/api/v1`);
  fingerprint = await svcdFingerprint(api);
  clientUrl = `http://127.0.0.1:${clientPort}`;
  // Every agent connects once so that svcd knows it; the queue tests stop theirs again.
  for (const id of ['late', 'gone', 'restart', 'worker', 'seq-1', 'seq-2']) await startAgent(id);
}, 120_000);

afterAll(async () => {
  for (const agent of agents.values()) await agent.stop();
  await svcd?.stop();
  await rm(dir, { recursive: true, force: true });
});

test('without queue_ttl a stopped client is refused as before; with it the job is queued and runs when the agent starts', async () => {
  await stopAgent('late');
  const refused = await api.post('/clients/late/commands', { command: 'echo hi' }, { auth: ADMIN });
  expect(refused.status).toBe(409);
  expect(refused.json.errors[0].code).toBe('ERR_CLIENT_NOT_CONNECTED');

  const jid = await command('late', { command: 'echo queued ran', queue_ttl: '10m' });
  const queued = await job('late', jid);
  expect(queued).toMatchObject({ status: 'queued', pid: null });
  expect(Date.parse(queued.queue_expires_at ?? '')).toBeGreaterThan(Date.now() + 9 * 60_000);

  await startAgent('late');
  const done = await jobIn('late', jid, ['successful', 'failed', 'unknown']);
  expect(done).toMatchObject({ status: 'successful', result: { stdout: 'queued ran\n' } });
}, 60_000);

test('a queued job whose client does not come within queue_ttl ends expired with the reason', async () => {
  await stopAgent('gone');
  const jid = await command('gone', { command: 'echo never', queue_ttl: 2 });
  expect((await job('gone', jid)).status).toBe('queued');
  const expired = await jobIn('gone', jid, ['expired']);
  expect(expired.error).toMatch(/did not connect within queue_ttl/);
  // The agent coming later does not run it.
  await startAgent('gone');
  const later = await command('gone', { command: 'echo after' });
  await jobIn('gone', later, ['successful']);
  expect((await job('gone', jid)).status).toBe('expired');
}, 60_000);

test('queued jobs (one client and a run) survive an svcd restart and run when the agent connects', async () => {
  await stopAgent('restart');
  const single = await command('restart', { command: 'echo single', queue_ttl: '1h' });
  const started = await api.post(
    '/commands',
    { command: 'echo multi', client_ids: ['worker', 'restart'], queue_ttl: '1h', execute_concurrently: true },
    { auth: ADMIN },
  );
  expect(started.status, started.text).toBe(200);
  const runJid = started.json.data.jid as string;
  const partly = await until('the online child to end', async () => {
    const view = await run(runJid);
    return view.jobs.find((j) => j.client_id === 'worker')?.status === 'successful' ? view : undefined;
  });
  expect(partly.status).toBe('running');
  expect(partly.jobs.find((j) => j.client_id === 'restart')?.status).toBe('queued');

  await svcd?.stop();
  svcd = await startSvcdProcess(configPath);
  expect((await job('restart', single)).status).toBe('queued');

  await startAgent('restart');
  expect(await jobIn('restart', single, ['successful'])).toMatchObject({ result: { stdout: 'single\n' } });
  const finished = await until('the run to end', async () => {
    const view = await run(runJid);
    return view.status === 'running' ? undefined : view;
  });
  expect(finished.status).toBe('successful');
  expect(finished.jobs.map((j) => j.result.stdout).sort()).toEqual(['multi\n', 'multi\n']);
  // The agents that kept running reconnect to the new svcd on their own (backoff); the next tests need them.
  for (const id of ['worker', 'seq-1', 'seq-2']) await connected(id);
}, 120_000);

test('cancel of a running job kills its whole process tree and keeps the output so far', async () => {
  const jid = await command('worker', { command: TREE, timeout_sec: 600 });
  const running = await until('the tree to start', async () => {
    const view = await job('worker', jid);
    if (view.pid === null) return undefined;
    return (await groupMembers(view.pid)).length >= 3 ? view : undefined;
  });
  const pgid = running.pid as number;

  const res = await api.delete(`/clients/worker/commands/${jid}`, { auth: ADMIN });
  expect(res.status, res.text).toBe(202);
  expect(res.json.data).toEqual({ jid, status: 'cancelling' });
  const cancelled = await jobIn('worker', jid, ['cancelled', 'failed', 'successful']);
  expect(cancelled).toMatchObject({ status: 'cancelled', result: { stdout: 'started\n' } });
  expect(cancelled.error).toMatch(/cancelled/);
  await until('every process of the group to be gone', async () =>
    (await groupMembers(pgid)).length === 0 ? true : undefined,
  );

  const again = await api.delete(`/clients/worker/commands/${jid}`, { auth: ADMIN });
  expect(again.status).toBe(409);
  expect(again.json.errors[0].code).toBe('ERR_JOB_ENDED');
  const unknown = await api.delete(`/clients/worker/commands/${crypto.randomUUID()}`, { auth: ADMIN });
  expect(unknown.status).toBe(404);
  expect((await api.delete(`/commands/${crypto.randomUUID()}`, { auth: ADMIN })).status).toBe(404);
}, 60_000);

test('cancel of a queued job ends it cancelled at once', async () => {
  await stopAgent('gone');
  const jid = await command('gone', { command: 'echo never', queue_ttl: '1h' });
  const res = await api.delete(`/clients/gone/commands/${jid}`, { auth: ADMIN });
  expect(res.status, res.text).toBe(202);
  expect(res.json.data).toEqual({ jid, status: 'cancelled' });
  expect(await job('gone', jid)).toMatchObject({ status: 'cancelled' });
}, 60_000);

test('timeout_kill kills the process tree at timeout_sec and reports failed; without it the job is unknown and runs on', async () => {
  const jid = await command('worker', { command: TREE, timeout_sec: 2, timeout_kill: true });
  const ended = await jobIn('worker', jid, ['failed', 'unknown', 'successful']);
  expect(ended).toMatchObject({ status: 'failed', result: { stdout: 'started\n' } });
  expect(ended.error).toMatch(/timeout_kill/);
  await until('every process of the group to be gone', async () =>
    (await groupMembers(ended.pid as number)).length === 0 ? true : undefined,
  );

  const plain = await command('worker', { command: TREE, timeout_sec: 1 });
  const unknown = await jobIn('worker', plain, ['unknown', 'failed']);
  expect(unknown.status).toBe('unknown');
  expect((await groupMembers(unknown.pid as number)).length).toBeGreaterThan(0);
  // Cleaned up by hand: nothing asks to stop a job that ended unknown.
  process.kill(-(unknown.pid as number), 'SIGKILL');
}, 60_000);

test('cancel of a sequential run stops its running child and records the clients not reached as cancelled', async () => {
  const started = await api.post(
    '/commands',
    { command: TREE, client_ids: ['seq-1', 'seq-2'], timeout_sec: 600 },
    { auth: ADMIN },
  );
  expect(started.status, started.text).toBe(200);
  const runJid = started.json.data.jid as string;
  const first = await until('the first child to run', async () => {
    const view = await run(runJid);
    const child = view.jobs[0];
    return child?.pid ? child : undefined;
  });
  const res = await api.delete(`/commands/${runJid}`, { auth: ADMIN });
  expect(res.status, res.text).toBe(202);
  expect(res.json.data).toMatchObject({ jid: runJid, cancelled: 1, cancelling: 1, not_cancelled: 0 });
  const ended = await until('the run to end', async () => {
    const view = await run(runJid);
    return view.status === 'running' ? undefined : view;
  });
  expect(ended.status).toBe('cancelled');
  const byClient = Object.fromEntries(ended.jobs.map((j) => [j.client_id, j]));
  expect(byClient['seq-1']).toMatchObject({ status: 'cancelled', result: { stdout: 'started\n' } });
  expect(byClient['seq-2']).toMatchObject({
    status: 'cancelled',
    error: 'not started: the run was cancelled',
  });
  await until('the first child’s processes to be gone', async () =>
    (await groupMembers(first.pid as number)).length === 0 ? true : undefined,
  );
  const again = await api.delete(`/commands/${runJid}`, { auth: ADMIN });
  expect(again.status).toBe(409);
}, 60_000);
