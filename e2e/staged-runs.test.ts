/**
 * Issue 27 §5 with real svcd and svc processes: a staged run stops at max_failures and the clients it did not
 * reach end `skipped`; svcd killed between batches (SIGKILL) ends the rest `skipped` at its next start, saying
 * why, and a rerun of the failed ones continues it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
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
const IDS = ['stage-1', 'stage-2', 'stage-3'];

interface RunView {
  jid: string;
  status: string;
  client_ids: string[];
  jobs: { client_id: string; status: string; error: string; result: { stdout: string } }[];
  rollout: {
    batches_done: number;
    batches_total: number;
    next_batch_at: string | null;
    stopped: string | null;
  };
}

let dir: string;
let configPath: string;
let api: ApiClient;
let svcd: RunningProcess | undefined;
const agents: RunningProcess[] = [];

/** Polls (bounded) until `check` returns a value: the REST API offers no event for a batch's end. */
async function until<T>(what: string, check: () => Promise<T | undefined>, withinMs = 30_000): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function run(jid: string): Promise<RunView> {
  const res = await api.get(`/commands/${jid}`, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data as RunView;
}

const ended = (jid: string) =>
  until(`run ${jid} to end`, async () => {
    const view = await run(jid);
    return view.status === 'running' ? undefined : view;
  });

async function start(body: Record<string, unknown>): Promise<string> {
  const res = await api.post('/commands', { client_ids: IDS, ...body }, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data.jid as string;
}

const statuses = (view: RunView) => Object.fromEntries(view.jobs.map((j) => [j.client_id, j.status]));

async function allConnected(): Promise<void> {
  await until('the agents to be connected', async () => {
    for (const id of IDS) {
      const res = await api.get(`/clients/${id}`, { auth: ADMIN });
      if (res.json.data?.connection_state !== 'connected') return undefined;
    }
    return true;
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-staged-'));
  const [apiPort, clientPort] = [await freePort(), await freePort()];
  await writeAdminUserFile(dir);
  configPath = await writeSvcdConfig(dir, {
    clientPort,
    apiPort,
    keySeed: 'e2e-staged-seed',
    server: ['auth = "agent:agent-password-1"'],
  });
  svcd = await startSvcdProcess(configPath);
  api = createApiClient(`http://127.0.0.1:${apiPort}/api/v1`);
  const fingerprint = await svcdFingerprint(api);
  for (const id of IDS)
    agents.push(
      await startE2eAgent({
        dir,
        server: `http://127.0.0.1:${clientPort}`,
        fingerprint,
        id,
        lines: [...SHELL_FRIENDLY_FILTERS, ...QUICK_RECONNECT],
      }),
    );
}, 120_000);

afterAll(async () => {
  for (const agent of agents) await agent.stop();
  await svcd?.stop();
  await rm(dir, { recursive: true, force: true });
});

test('batches of one with max_failures 1: the first failure stops the run, the rest are skipped', async () => {
  const jid = await start({
    command: 'echo rolling; exit 3',
    abort_on_error: false,
    batch_size: 1,
    max_failures: 1,
  });
  const view = await ended(jid);
  expect(view.status).toBe('skipped');
  expect(statuses(view)).toEqual({ 'stage-1': 'failed', 'stage-2': 'skipped', 'stage-3': 'skipped' });
  expect(view.jobs.find((j) => j.client_id === 'stage-1')?.result.stdout).toBe('rolling\n');
  expect(view.rollout).toMatchObject({ batches_done: 1, batches_total: 3, next_batch_at: null });
  expect(view.rollout.stopped).toMatch(/max_failures reached \(1 jobs failed, max_failures 1\)/);
}, 60_000);

test('svcd killed between batches: at its next start the rest end skipped saying why; a rerun continues', async () => {
  const jid = await start({ command: 'echo batch', batch_size: 1, batch_delay: '1h' });
  const waiting = await until('batch 1 to end', async () => {
    const view = await run(jid);
    return view.rollout.batches_done === 1 ? view : undefined;
  });
  expect(Date.parse(waiting.rollout.next_batch_at ?? '')).toBeGreaterThan(Date.now() + 59 * 60_000);

  await svcd?.stop(); // SIGKILL: no graceful stop records anything
  svcd = await startSvcdProcess(configPath);
  const after = await run(jid);
  expect(after.status).toBe('skipped');
  expect(statuses(after)).toEqual({ 'stage-1': 'successful', 'stage-2': 'skipped', 'stage-3': 'skipped' });
  expect(after.rollout).toMatchObject({ batches_done: 1, next_batch_at: null });
  expect(after.rollout.stopped).toMatch(/svcd stopped \(it was killed or crashed\) during the staged run/);
  expect(after.jobs.find((j) => j.client_id === 'stage-3')?.error).toBe(after.rollout.stopped);

  await allConnected();
  const res = await api.post(`/commands/${jid}/rerun?only=failed`, undefined, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  const again = res.json.data.jid as string;
  // The rerun keeps batch_delay: its second batch waits an hour, so only its first client runs now.
  const first = await until('the rerun to finish its first batch', async () => {
    const view = await run(again);
    return view.rollout.batches_done === 1 ? view : undefined;
  });
  expect(first.client_ids).toEqual(['stage-2', 'stage-3']);
  expect(statuses(first)).toEqual({ 'stage-2': 'successful' });
  const cancelled = await api.delete(`/commands/${again}`, { auth: ADMIN });
  expect(cancelled.status).toBe(202);
  expect(statuses(await ended(again))).toEqual({ 'stage-2': 'successful', 'stage-3': 'cancelled' });
}, 90_000);
