/**
 * Issue 27 §4 with real svcd and svc processes: a run's `env` with a vault reference reaches the process's
 * environment (read from /proc), never its command line or script file, and every occurrence of the value is
 * redacted from the stored output, the /ws/scripts stream and svcd's log; a locked vault, a missing entry or a
 * required_group the caller lacks refuse the run before anything runs.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startE2eSvcdOnFreePorts, E2E_ADMIN } from '../test-support/e2e-setup.js';
import type { ApiClient } from '../test-support/api-client.js';
import type { RunningProcess } from '../test-support/process.js';
import { SHELL_FRIENDLY_FILTERS, startE2eAgent } from '../test-support/e2e-agent.js';

const ADMIN = { basic: [E2E_ADMIN.username, E2E_ADMIN.password] as [string, string] };
const SECRET = 'Sup3r-s3cret-' + 'x9Q7'.repeat(3);
const CLIENT = 'secrets-agent';

interface JobView {
  jid: string;
  status: string;
  error: string;
  pid: number | null;
  result: { stdout: string; stderr: string };
}

let dir: string;
let api: ApiClient;
let apiPort: number;
let svcd: RunningProcess | undefined;
let agent: RunningProcess | undefined;

const b64 = (text: string) => Buffer.from(text).toString('base64');
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Polls (bounded) until `check` returns a value: the REST API offers no event for a job's state. */
async function until<T>(what: string, check: () => Promise<T | undefined>, withinMs = 30_000): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function job(jid: string): Promise<JobView> {
  const res = await api.get(`/clients/${CLIENT}/commands/${jid}`, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data as JobView;
}

const ended = (jid: string) =>
  until(`job ${jid} to end`, async () => {
    const view = await job(jid);
    return view.status === 'running' ? undefined : view;
  });

async function jobCount(): Promise<number> {
  const res = await api.get(`/clients/${CLIENT}/commands`, { auth: ADMIN });
  return res.json.meta.count as number;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-run-secrets-'));
  const started = await startE2eSvcdOnFreePorts(dir, {
    keySeed: 'e2e-run-secrets-seed',
    server: ['auth = "agent:agent-password-1"'],
    // The last section: svcd logs at debug level, so the log check sees everything it writes.
    api: ['[logging]', 'log_level = "debug"'],
  });
  ({ svcd, api, apiPort } = started);
  agent = await startE2eAgent({
    dir,
    server: `http://127.0.0.1:${started.clientPort}`,
    fingerprint: started.fingerprint,
    id: CLIENT,
    lines: SHELL_FRIENDLY_FILTERS,
  });
  expect((await api.post('/vault-admin/init', { password: 'e2e-Vault-Pw-7' }, { auth: ADMIN })).status).toBe(
    201,
  );
  for (const entry of [
    { key: 'db-prod', value: SECRET, type: 'secret' },
    { key: 'team-only', value: 'team-value-1234', type: 'secret', required_group: 'secret-team' },
  ]) {
    const res = await api.post('/vault', entry, { auth: ADMIN });
    expect(res.status, res.text).toBe(201);
  }
}, 120_000);

afterAll(async () => {
  await agent?.stop();
  await svcd?.stop();
  await rm(dir, { recursive: true, force: true });
});

test('the secret is in the process environment, not on its command line or in its script file', async () => {
  const go = join(dir, 'go-1');
  // Waits for the test to look at the running process and its script file, then proves what it got.
  const script = [
    'echo ready',
    'while [ ! -f "$GO" ]; do sleep 0.05; done',
    'printf %s "$DB_PASS" | sha256sum',
    'echo "mode=$MODE"',
  ].join('\n');
  const res = await api.post(
    `/clients/${CLIENT}/scripts`,
    { script: b64(script), env: { DB_PASS: { vault: 'db-prod' }, MODE: 'fast', GO: go } },
    { auth: ADMIN },
  );
  expect(res.status, res.text).toBe(200);
  const jid = res.json.data.jid as string;
  const { pid } = await until('the job to start', async () => {
    const view = await job(jid);
    return view.pid === null ? undefined : { pid: view.pid };
  });

  const environ = (await readFile(`/proc/${pid}/environ`)).toString('utf8').split('\0');
  expect(environ).toContain(`DB_PASS=${SECRET}`);
  expect(environ).toContain('MODE=fast');
  expect((await readFile(`/proc/${pid}/cmdline`)).toString('utf8')).not.toContain(SECRET);
  const scriptsDir = join(dir, `${CLIENT}-data`, 'scripts');
  const files = await readdir(scriptsDir);
  expect(files.length).toBeGreaterThan(0);
  for (const file of files) {
    const text = await readFile(join(scriptsDir, file), 'utf8');
    expect(text).toContain('sha256sum');
    expect(text).not.toContain(SECRET);
  }
  await writeFile(go, '');

  const done = await ended(jid);
  expect(done.status, done.error).toBe('successful');
  expect(done.result.stdout).toBe(`ready\n${sha256(SECRET)}  -\nmode=fast\n`);
});

test('every occurrence of the value is redacted from stored output, even split over output chunks', async () => {
  const command = [
    'echo "out: $DB_PASS and again $DB_PASS"',
    'echo "err: $DB_PASS" >&2',
    // The value in two writes a moment apart: two output chunks.
    'printf %s "${DB_PASS%????????}"; sleep 0.2; printf "%s\\n" "${DB_PASS#${DB_PASS%????????}}"',
  ].join('; ');
  const res = await api.post(
    `/clients/${CLIENT}/commands`,
    { command, env: { DB_PASS: { vault: 'db-prod' } } },
    { auth: ADMIN },
  );
  expect(res.status, res.text).toBe(200);
  const done = await ended(res.json.data.jid as string);
  expect(done.status, done.error).toBe('successful');
  expect(done.result.stdout).toBe(
    'out: [redacted:db-prod] and again [redacted:db-prod]\n[redacted:db-prod]\n',
  );
  expect(done.result.stderr).toBe('err: [redacted:db-prod]\n');
  expect(JSON.stringify(await job(done.jid))).not.toContain(SECRET);
});

test('the live /ws/scripts stream carries the redacted output only', async () => {
  const ws = new WebSocket(`ws://127.0.0.1:${apiPort}/api/v1/ws/scripts`, {
    headers: {
      authorization: `Basic ${Buffer.from(`${E2E_ADMIN.username}:${E2E_ADMIN.password}`).toString('base64')}`,
    },
  });
  const messages: string[] = [];
  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  ws.on('message', (data: Buffer) => messages.push(data.toString('utf8')));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const script = 'echo "live $DB_PASS"\nsleep 0.2\necho "later $DB_PASS"\n';
  ws.send(
    JSON.stringify({
      script: b64(script),
      client_ids: [CLIENT],
      env: { DB_PASS: { vault: 'db-prod' } },
    }),
  );
  await closed;
  const all = messages.join('\n');
  expect(all).not.toContain(SECRET);
  expect(all).toContain('live [redacted:db-prod]');
  const final = messages.map((m) => JSON.parse(m) as Partial<JobView>).find((m) => m.status !== undefined);
  expect(final?.status).toBe('successful');
  expect(final?.result?.stdout).toBe('live [redacted:db-prod]\nlater [redacted:db-prod]\n');
});

test('a multi-client run resolves the shared entry and redacts its children, and so does its rerun', async () => {
  const res = await api.post(
    '/commands',
    { command: 'echo "multi $DB_PASS"', client_ids: [CLIENT], env: { DB_PASS: { vault: 'db-prod' } } },
    { auth: ADMIN },
  );
  expect(res.status, res.text).toBe(200);
  const run = await until('the run to end', async () => {
    const view = await api.get(`/commands/${res.json.data.jid as string}`, { auth: ADMIN });
    return view.json.data.status === 'running' ? undefined : (view.json.data as { jobs: JobView[] });
  });
  expect(run.jobs.map((j) => j.result.stdout)).toEqual(['multi [redacted:db-prod]\n']);

  // A rerun starts with the reference (never the value) and resolves it again at its own dispatch.
  const again = await api.post(`/commands/${res.json.data.jid as string}/rerun?only=all`, undefined, {
    auth: ADMIN,
  });
  expect(again.status, again.text).toBe(200);
  const rerun = await until('the rerun to end', async () => {
    const view = await api.get(`/commands/${again.json.data.jid as string}`, { auth: ADMIN });
    return view.json.data.status === 'running'
      ? undefined
      : (view.json.data as { jobs: JobView[]; env: unknown });
  });
  expect(rerun.env).toEqual({ DB_PASS: { vault: 'db-prod' } });
  expect(rerun.jobs.map((j) => j.result.stdout)).toEqual(['multi [redacted:db-prod]\n']);
});

test('a locked vault, a missing entry and a required_group the caller lacks refuse the run before it runs', async () => {
  const before = await jobCount();
  const ref = (vault: string) => ({ command: 'echo never', env: { X: { vault } } });

  const team = await api.post(`/clients/${CLIENT}/commands`, ref('team-only'), { auth: ADMIN });
  expect(team.status, team.text).toBe(403);
  expect(team.json.errors[0].code).toBe('ERR_VAULT_GROUP_REQUIRED');

  const missing = await api.post(`/clients/${CLIENT}/commands`, ref('no-such-key'), { auth: ADMIN });
  expect(missing.status, missing.text).toBe(404);
  expect(missing.json.errors[0].code).toBe('ERR_VAULT_ENTRY_NOT_FOUND');

  const queued = await api.post(
    `/clients/${CLIENT}/commands`,
    { ...ref('db-prod'), queue_ttl: '5m' },
    { auth: ADMIN },
  );
  expect(queued.status, queued.text).toBe(400);

  const badName = await api.post(
    `/clients/${CLIENT}/commands`,
    { command: 'echo x', env: { '1BAD': 'x' } },
    { auth: ADMIN },
  );
  expect(badName.status, badName.text).toBe(400);

  expect((await api.delete('/vault-admin/sesame', { auth: ADMIN })).status).toBe(204);
  const locked = await api.post(`/clients/${CLIENT}/commands`, ref('db-prod'), { auth: ADMIN });
  expect(locked.status, locked.text).toBe(409);
  expect(locked.json.errors[0].code).toBe('ERR_VAULT_LOCKED');
  const runsBefore = (await api.get('/commands', { auth: ADMIN })).json.meta.count as number;
  const lockedRun = await api.post('/commands', { ...ref('db-prod'), client_ids: [CLIENT] }, { auth: ADMIN });
  expect(lockedRun.status, lockedRun.text).toBe(409);
  expect((await api.get('/commands', { auth: ADMIN })).json.meta.count).toBe(runsBefore);
  expect(await jobCount()).toBe(before);

  // svcd logged nothing of the value, at debug level, through all of the above.
  const log = (svcd?.stdoutLines.join('\n') ?? '') + (svcd?.stderr ?? '');
  expect(log).not.toContain(SECRET);
  expect(log).not.toContain(b64(SECRET));
});
