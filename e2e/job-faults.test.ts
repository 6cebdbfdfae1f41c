/**
 * Jobs across crashes, with real processes: svc agents killed with SIGKILL during a job, and svcd killed with
 * SIGKILL during a job and during a sequential multi-client run. No job stays `running` for ever and every target
 * of an interrupted run gets a child job with a clear state; results an agent kept are still stored.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
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
import { SVCD_BIN, freePort, startProcess, type RunningProcess } from '../test-support/process.js';
import { QUICK_RECONNECT, SHELL_FRIENDLY_FILTERS, startE2eAgent } from '../test-support/e2e-agent.js';

const ADMIN = { basic: ['admin', 'admin-secret-1'] as [string, string] };

interface JobView {
  jid: string;
  client_id: string;
  status: string;
  error: string;
  started_at: string | null;
  finished_at: string | null;
  result: { stdout: string };
}
interface RunView {
  status: string;
  finished_at: string | null;
  client_ids: string[];
  jobs: JobView[];
}

let dir: string;
let configPath: string;
let api: ApiClient;
let svcd: RunningProcess | undefined;
let clientUrl: string;
let fingerprint: string;
const agents = new Map<string, RunningProcess>();

/** An agent that runs shell loops (deny-first filters), with its own data folder. */
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

/** Polls (bounded) until `check` returns a value: the API offers no event for a job's end. */
async function until<T>(what: string, check: () => Promise<T | undefined>, withinMs = 60_000): Promise<T> {
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

async function multiRun(jid: string): Promise<RunView> {
  const res = await api.get(`/commands/${jid}`, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data as RunView;
}

/** A command that runs until `flag` exists, then prints `said`. */
const untilFlag = (flag: string, said: string) => `while [ ! -e ${flag} ]; do sleep 0.05; done; echo ${said}`;

const killed = async (process: RunningProcess | undefined) => {
  process?.child.kill('SIGKILL');
  await process?.exited;
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-job-faults-'));
  const [apiPort, clientPort] = [await freePort(), await freePort()];
  await writeAdminUserFile(dir);
  configPath = await writeSvcdConfig(dir, {
    clientPort,
    apiPort,
    keySeed: 'e2e-job-faults-seed',
    server: ['auth = "agent:agent-password-1"'],
  });
  svcd = await startSvcdProcess(configPath);
  api = createApiClient(`http://127.0.0.1:${apiPort}/api/v1`);
  fingerprint = await svcdFingerprint(api);
  clientUrl = `http://127.0.0.1:${clientPort}`;
  for (const id of ['victim', 'solo', 'seq-1', 'seq-2', 'seq-3']) await startAgent(id);
}, 90_000);

afterAll(async () => {
  await writeFile(join(dir, 'stop-everything'), '').catch(() => undefined);
  for (const agent of agents.values()) await agent.stop();
  await svcd?.stop();
  await rm(dir, { recursive: true, force: true });
});

test('an agent killed during a job: when it comes back without the job, the job ends unknown with the reason', async () => {
  const flag = join(dir, 'stop-everything');
  const res = await api.post(
    '/clients/victim/commands',
    { command: untilFlag(flag, 'never'), timeout_sec: 5 },
    { auth: ADMIN },
  );
  expect(res.status, res.text).toBe(200);
  const jid = res.json.data.jid as string;
  expect((await job('victim', jid)).status).toBe('running');

  await killed(agents.get('victim'));
  await startAgent('victim');
  const ended = await until('the lost job to end', async () => {
    const view = await job('victim', jid);
    return view.status === 'running' ? undefined : view;
  });
  expect(ended).toMatchObject({ status: 'unknown', result: { stdout: '' } });
  expect(ended.error).toMatch(/reconnected without this job/);
  expect(ended.finished_at).not.toBeNull();
}, 60_000);

test('svcd killed during a job and during a sequential run: results kept by agents are stored; every target has a child; the run ends', async () => {
  const flag = join(dir, 'go-on');
  const solo = await api.post(
    '/clients/solo/commands',
    { command: untilFlag(flag, 'solo done'), timeout_sec: 120 },
    { auth: ADMIN },
  );
  expect(solo.status, solo.text).toBe(200);
  const soloJid = solo.json.data.jid as string;
  const started = await api.post(
    '/commands',
    { command: untilFlag(flag, 'seq done'), client_ids: ['seq-1', 'seq-2', 'seq-3'], timeout_sec: 120 },
    { auth: ADMIN },
  );
  expect(started.status, started.text).toBe(200);
  const runJid = started.json.data.jid as string;
  // The first client runs its child; the others wait their turn.
  await until('the first child to start', async () => {
    const view = await multiRun(runJid);
    return view.jobs.length === 1 && view.jobs[0]?.started_at ? view : undefined;
  });
  expect((await multiRun(runJid)).status).toBe('running');

  await killed(svcd);
  // A start after a crash may take longer on a loaded machine than the usual 20 s allowance.
  svcd = startProcess(SVCD_BIN, ['-c', configPath]);
  await svcd.waitForLog('API listening', 60_000);

  const recovered = await multiRun(runJid);
  const byClient = Object.fromEntries(recovered.jobs.map((j) => [j.client_id, j]));
  expect(Object.keys(byClient).sort()).toEqual(['seq-1', 'seq-2', 'seq-3']);
  expect(byClient['seq-1']?.status).toBe('running');
  for (const id of ['seq-2', 'seq-3'])
    expect(byClient[id]).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/^not started: svcd stopped/),
      started_at: null,
    });
  expect(recovered).toMatchObject({ status: 'running', finished_at: null });

  // The jobs end while svcd knows them from before the crash; the agents kept the results and send them now.
  await writeFile(flag, '');
  const soloDone = await until('the solo job to end', async () => {
    const view = await job('solo', soloJid);
    return view.status === 'running' ? undefined : view;
  });
  expect(soloDone).toMatchObject({ status: 'successful', result: { stdout: 'solo done\n' } });
  const finished = await until('the run to end', async () => {
    const view = await multiRun(runJid);
    return view.status === 'running' ? undefined : view;
  });
  const first = finished.jobs.find((j) => j.client_id === 'seq-1');
  expect(first).toMatchObject({ status: 'successful', result: { stdout: 'seq done\n' } });
  expect(finished.status).toBe('failed');
  const ends = finished.jobs.map((j) => j.finished_at as string).sort();
  expect(finished.finished_at).toBe(ends.at(-1));
  expect(agents.get('seq-2')?.stdoutLines.some((l) => l.includes('seq done'))).toBe(false);
}, 240_000);
