/**
 * The audit log with a real svcd process and a real svc agent: the agent's connect and disconnect, a run on it
 * and a tunnel to it are records; the records are in the database, so they are still there after svcd restarts.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { AGENT_BUNDLE } from '../scripts/agent-bundle.js';
import type { ApiClient } from '../test-support/api-client.js';
import { startE2eSvcd, startSvcdProcess } from '../test-support/e2e-setup.js';
import { freePort, startExecutable, type RunningProcess } from '../test-support/process.js';
import { startEchoServer } from '../test-support/tcp.js';

const ADMIN = { basic: ['admin', 'admin-secret-1'] as [string, string] };
const CLIENT_ID = 'audited-agent';

let dir: string;
let api: ApiClient;
let configPath: string;
let svcd: RunningProcess | undefined;
let agent: RunningProcess | undefined;
let echo: Server | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-audit-'));
  echo = await startEchoServer();
  const [apiPort, clientPort] = [await freePort(), await freePort()];
  const started = await startE2eSvcd(dir, {
    clientPort,
    apiPort,
    keySeed: 'e2e-audit-seed',
    server: ['auth = "agent:agent-password-1"'],
  });
  ({ svcd, api, configPath } = started);
  agent = startExecutable(
    process.execPath,
    [
      ...[AGENT_BUNDLE, '--auth', 'agent:agent-password-1', '--id', CLIENT_ID],
      ...['--fingerprint', started.fingerprint, '--data-dir', join(dir, 'agent-data')],
      `http://127.0.0.1:${clientPort}`,
    ],
    { cwd: dir, env: { SVC_AUTH: undefined } },
  );
  await agent.waitForLog('connected to svcd');
});

afterAll(async () => {
  await agent?.stop();
  await svcd?.stop();
  echo?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const recordsOf = async () => {
  const res = await api.get(`/auditlog?filter[client_id]=${CLIENT_ID}&sort=timestamp&page[limit]=100`, {
    auth: ADMIN,
  });
  expect(res.status, res.text).toBe(200);
  return (res.json.data as { application: string; action: string; outcome: string }[]).map(
    (r) => `${r.application} ${r.action} ${r.outcome}`,
  );
};

test('connect, run, tunnel and disconnect of a real agent are recorded and survive a restart', async () => {
  const run = await api.post(`/clients/${CLIENT_ID}/commands`, { command: 'echo audited' }, { auth: ADMIN });
  expect(run.status, run.text).toBe(200);
  const echoPort = (echo!.address() as AddressInfo).port;
  const tunnel = await api.request('PUT', `/clients/${CLIENT_ID}/tunnels?remote=127.0.0.1:${echoPort}`, {
    auth: ADMIN,
  });
  expect(tunnel.status, tunnel.text).toBe(200);
  await agent!.stop();
  agent = undefined;
  const expected = [
    'client connect success',
    'client.command execute.start success',
    'client.tunnel update success',
    'client disconnect success',
  ];
  // svcd writes the queue within ~50 ms; the disconnect is noticed when the agent's connection closes.
  await expect.poll(recordsOf, { timeout: 15_000 }).toEqual(expected);

  await svcd!.stop();
  svcd = await startSvcdProcess(configPath);
  expect(await recordsOf()).toEqual(expected);
});
