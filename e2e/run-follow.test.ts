/**
 * Following a run or a job that was started elsewhere (POST /commands), through real processes: svcd, three real
 * svc agents and a WebSocket on /api/v1/ws/commands/{jid}. The socket sends what /ws/commands sends (output chunks,
 * one final record per client) for a run already running when it opens, and closes when the run has ended.
 */
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { WebSocket } from 'ws';
import { basicHeader, type ApiClient } from '../test-support/api-client.js';
import { E2E_ADMIN, startE2eSvcdOnFreePorts } from '../test-support/e2e-setup.js';
import { SHELL_FRIENDLY_FILTERS, startE2eAgent } from '../test-support/e2e-agent.js';
import type { RunningProcess } from '../test-support/process.js';

/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-return -- tests inspect arbitrary JSON */
type Json = any;

const ADMIN = { basic: [E2E_ADMIN.username, E2E_ADMIN.password] as [string, string] };
const AGENTS = ['follow-1', 'follow-2', 'follow-3'];

let dir: string;
let api: ApiClient;
let apiPort: number;
let svcd: RunningProcess | undefined;
const agents: RunningProcess[] = [];

interface Follow {
  messages: Json[];
  /** Resolves once a message matching `check` has arrived (or one already had). */
  when(check: (messages: Json[]) => boolean): Promise<void>;
  closed: Promise<number>;
}

function follow(jid: string, headers: Record<string, string> = {}): Promise<Follow> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${apiPort}/api/v1/ws/commands/${jid}`, {
      headers: {
        authorization: basicHeader(E2E_ADMIN.username, E2E_ADMIN.password),
        // As a browser page of the console: svcd ends with a close frame.
        origin: `http://127.0.0.1:${apiPort}`,
        ...headers,
      },
    });
    const messages: Json[] = [];
    const waiters: (() => void)[] = [];
    ws.on('message', (data) => {
      messages.push(JSON.parse((data as Buffer).toString('utf8')));
      for (const wake of waiters.splice(0)) wake();
    });
    const closed = new Promise<number>((done) => ws.once('close', (code) => done(code)));
    ws.once('unexpected-response', (_req, res) =>
      reject(Object.assign(new Error('refused'), { status: res.statusCode })),
    );
    ws.once('open', () =>
      resolve({
        messages,
        closed,
        when: async (check) => {
          while (!check(messages)) await new Promise<void>((wake) => waiters.push(wake));
        },
      }),
    );
  });
}

const finals = (messages: Json[]) => messages.filter((m) => typeof m.status === 'string');
const chunksOf = (messages: Json[], clientId: string) =>
  messages.filter((m) => m.status === undefined && m.client_id === clientId);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-run-follow-'));
  const started = await startE2eSvcdOnFreePorts(dir, {
    keySeed: 'e2e-run-follow-seed',
    server: ['auth = "agent:agent-password-1"'],
  });
  ({ api, svcd, apiPort } = started);
  for (const id of AGENTS)
    agents.push(
      await startE2eAgent({
        dir,
        server: `http://127.0.0.1:${started.clientPort}`,
        fingerprint: started.fingerprint,
        id,
        lines: SHELL_FRIENDLY_FILTERS,
      }),
    );
}, 120_000);

afterAll(async () => {
  for (const agent of agents) await agent.stop();
  await svcd?.stop();
  await rm(dir, { recursive: true, force: true });
});

test('a run already running is followed live: output chunks and a final record per client, then the socket closes', async () => {
  const go = join(dir, 'go');
  // Each job prints a line, waits for the test's file, then prints another and ends.
  const command = `echo before; while [ ! -e ${go} ]; do sleep 0.05; done; echo after-$(cat ${go})`;
  const res = await api.post(
    '/commands',
    { command, client_ids: AGENTS, execute_concurrently: true, timeout_sec: 60 },
    { auth: ADMIN },
  );
  expect(res.status, res.text).toBe(200);
  const jid = res.json.data.jid as string;

  const socket = await follow(jid);
  // Every child is announced as running (one empty chunk) before it has finished.
  await socket.when((m) => AGENTS.every((id) => chunksOf(m, id).length > 0));
  expect(finals(socket.messages)).toHaveLength(0);
  // Written aside and renamed: a job must never see the file before its content (it would print `after-`).
  await writeFile(`${go}.tmp`, 'now\n');
  await rename(`${go}.tmp`, go);

  await socket.when((m) => finals(m).length === AGENTS.length);
  expect(await socket.closed).toBe(1000);
  for (const id of AGENTS) {
    const live = chunksOf(socket.messages, id)
      .map((m) => m.result.stdout)
      .join('');
    expect(live).toContain('after-now');
    const final = finals(socket.messages).find((m) => m.client_id === id);
    expect(final).toMatchObject({ status: 'successful', exit_code: 0, multi_job_id: jid });
    expect(final.result.stdout).toBe('before\nafter-now\n');
  }
}, 60_000);

test('a run that has ended is sent at once, one final record per client, and closed', async () => {
  const res = await api.post(
    '/commands',
    { command: 'echo done; exit 3', client_ids: AGENTS, execute_concurrently: true },
    { auth: ADMIN },
  );
  const jid = res.json.data.jid as string;
  const ended = async () => {
    for (;;) {
      const run = await api.get(`/commands/${jid}`, { auth: ADMIN });
      if (run.json.data.status !== 'running') return;
      // The run has no event on REST: a bounded poll.
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  await ended();
  const socket = await follow(jid);
  expect(await socket.closed).toBe(1000);
  expect(
    finals(socket.messages)
      .map((m) => [m.client_id, m.status, m.exit_code])
      .sort(),
  ).toEqual(AGENTS.map((id) => [id, 'failed', 3]));
}, 60_000);

test('one job of one client is followed by its jid', async () => {
  const go = join(dir, 'go-single');
  const res = await api.post(
    `/clients/${AGENTS[0]}/commands`,
    { command: `while [ ! -e ${go} ]; do sleep 0.05; done; echo single` },
    { auth: ADMIN },
  );
  expect(res.status, res.text).toBe(200);
  const jid = res.json.data.jid as string;
  const socket = await follow(jid);
  await socket.when((m) => m.length > 0);
  await writeFile(go, '');
  expect(await socket.closed).toBe(1000);
  const [final] = finals(socket.messages);
  expect(final).toMatchObject({ jid, status: 'successful', result: { stdout: 'single\n' } });
}, 60_000);

test('an unknown jid gets the 404 error on the socket; a foreign Origin and a missing login are refused', async () => {
  const unknown = await follow('00000000-0000-4000-8000-000000000000');
  expect(await unknown.closed).toBe(1008);
  expect(unknown.messages[0].errors[0].code).toBe('ERR_MULTI_JOB_NOT_FOUND');

  await expect(follow('x', { origin: 'http://evil.example' })).rejects.toMatchObject({ status: 403 });
  await expect(
    new Promise((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${apiPort}/api/v1/ws/commands/x`);
      ws.once('unexpected-response', (_req, res) =>
        reject(Object.assign(new Error('refused'), { status: res.statusCode })),
      );
      ws.once('open', resolve);
    }),
  ).rejects.toMatchObject({ status: 401 });
}, 30_000);
