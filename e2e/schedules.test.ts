/**
 * One real schedule firing with real processes: svcd and two svc agents. A schedule every minute on a client group
 * fires at a real minute boundary and its run includes an agent that joined the group after the schedule was made
 * (targets are resolved at each firing).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startE2eSvcd } from '../test-support/e2e-setup.js';
import type { ApiClient } from '../test-support/api-client.js';
import { SVC_BIN, freePort, parseLog, startProcess, type RunningProcess } from '../test-support/process.js';

const ADMIN = { basic: ['admin', 'admin-secret-1'] as [string, string] };
const CREDENTIALS = { 'agent-a': 'password-a-1' };

let dir: string;
let clientUrl: string;
let fingerprint: string;
let api: ApiClient;
let svcd: RunningProcess | undefined;
const agents: RunningProcess[] = [];

async function waitFor(check: () => Promise<boolean>, what: string, withinMs = 30_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Starts agent `id` with a label; resolves once svcd lists it connected. */
async function runAgent(id: string, label: string): Promise<void> {
  const proc = startProcess(SVC_BIN, [
    ...['--auth', `agent-a:${CREDENTIALS['agent-a']}`, '--id', id, '--fingerprint', fingerprint],
    ...['--label', label, '--data-dir', join(dir, id), clientUrl],
  ]);
  agents.push(proc);
  await waitFor(async () => {
    const res = await api.get(`/clients/${id}`, { auth: ADMIN });
    return res.json?.data?.connection_state === 'connected';
  }, `${id} connected`);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-schedules-'));
  const [apiPort, clientPort] = [await freePort(), await freePort()];
  clientUrl = `http://127.0.0.1:${clientPort}`;
  await writeFile(join(dir, 'clients-auth.json'), JSON.stringify(CREDENTIALS));
  ({ svcd, api, fingerprint } = await startE2eSvcd(dir, {
    clientPort,
    apiPort,
    keySeed: 'e2e-schedules-seed',
    // The [schedules] section after [server]'s keys: no wait before the first tick.
    server: ['auth_file = "clients-auth.json"', '[schedules]', 'catch_up_delay = "0s"'],
  }));
  await runAgent('early-1', 'site:lab');
}, 60_000);

afterAll(async () => {
  for (const proc of agents) await proc.stop();
  await svcd?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('schedules with real agents', () => {
  test('a schedule on a group fires at the minute and includes an agent that joined the group after it was made', async () => {
    const group = await api.post(
      '/client-groups',
      { id: 'lab', params: { labels: ['site:lab'] } },
      { auth: ADMIN },
    );
    expect(group.status, group.text).toBe(201);
    const created = await api.post(
      '/schedules',
      {
        name: 'every minute on the lab',
        schedule: '* * * * *',
        type: 'command',
        command: '/usr/bin/echo fired',
        group_ids: ['lab'],
        execute_concurrently: true,
      },
      { auth: ADMIN },
    );
    expect(created.status, created.text).toBe(201);
    const id = created.json.data.id as string;

    await runAgent('late-1', 'site:lab');
    // When svcd took the late agent in (its own log time, not when this test saw it, which can be seconds later
    // on a loaded machine): every firing at a minute after it resolves its targets with the agent connected.
    const joined = parseLog(
      await svcd!.waitForLine((l) => {
        const log = parseLog(l);
        return log?.msg === 'client connected' && log.client_id === 'late-1';
      }),
    )!;
    const joinedAt = Date.parse(String(joined.time));
    const firstMinute = joinedAt - (joinedAt % 60_000) + 60_000;
    // That minute's firing, with time for a slow tick on a loaded machine (its lateness is checked below).
    const line = await svcd!.waitForLine(
      (l) => {
        const log = parseLog(l);
        return (
          log?.msg === 'schedule fired' &&
          log.schedule_id === id &&
          Date.parse(String(log.scheduled_at)) > joinedAt
        );
      },
      Math.max(firstMinute + 30_000 - Date.now(), 1_000),
    );
    const fired = parseLog(line)!;
    expect(fired.outcome).toBe('started');
    const scheduledAt = Date.parse(String(fired.scheduled_at));
    expect(scheduledAt % 60_000).toBe(0);

    let run:
      | {
          status: string;
          schedule_id: string;
          jobs: { client_id: string; status: string; result: { stdout: string } }[];
        }
      | undefined;
    await waitFor(async () => {
      run = (await api.get(`/commands/${String(fired.jid)}`, { auth: ADMIN })).json.data;
      return run?.status !== 'running';
    }, 'the scheduled run to finish');
    expect(run!.schedule_id).toBe(id);
    expect(run!.status).toBe('successful');
    expect(run!.jobs.map((j) => j.client_id).sort()).toEqual(['early-1', 'late-1']);
    for (const job of run!.jobs) expect(job.result.stdout).toBe('fired\n');

    const runs = await api.get(`/schedules/${id}/runs`, { auth: ADMIN });
    const firing = (runs.json.data as { jid: string; scheduled_at: string; fired_at: string }[]).find(
      (f) => f.jid === fired.jid,
    );
    expect(firing?.scheduled_at).toBe(new Date(scheduledAt).toISOString());
    // Fired within 5 s of its minute.
    expect(Date.parse(firing!.fired_at) - scheduledAt).toBeLessThan(5_000);
  }, 150_000);
});
