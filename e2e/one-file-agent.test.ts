/**
 * The one-file agent (`npm run build:agent`, issue 18): built here, then started directly, with no node on its PATH
 * and no node_modules around it, against a real svcd: it connects, a tunnel carries bytes, and a command runs.
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import type { AddressInfo, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ONE_FILE_AGENT, buildOneFileAgent } from '../scripts/one-file-agent.js';
import { roundTrip, startEchoServer } from '../test-support/tcp.js';
import type { ApiClient } from '../test-support/api-client.js';
import { startE2eSvcd } from '../test-support/e2e-setup.js';
import { freePort, startExecutable, type RunningProcess } from '../test-support/process.js';

const ADMIN = { basic: ['admin', 'admin-secret-1'] as [string, string] };
const CLIENT_ID = 'one-file';

let dir: string;
let api: ApiClient;
let svcd: RunningProcess | undefined;
let agent: RunningProcess | undefined;
let echo: Server | undefined;
let agentFile: string;

beforeAll(async () => {
  // The build is part of the test (as CI must build it): ~5 s, mostly copying and patching the node binary.
  await buildOneFileAgent();
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-one-file-'));
  // A copy in a folder with no node_modules anywhere above it, and a PATH holding only sh (the default
  // interpreter for commands): no node to be found.
  agentFile = join(dir, 'svc');
  await copyFile(ONE_FILE_AGENT, agentFile);
  await mkdir(join(dir, 'bin'));
  await symlink('/bin/sh', join(dir, 'bin', 'sh'));
  echo = await startEchoServer();
  const [apiPort, clientPort] = [await freePort(), await freePort()];
  const started = await startE2eSvcd(dir, {
    clientPort,
    apiPort,
    keySeed: 'e2e-one-file-seed',
    server: ['auth = "agent:agent-password-1"'],
  });
  ({ svcd, api } = started);
  const { fingerprint } = started;
  const agentConf = join(dir, 'svc.conf');
  await writeFile(
    agentConf,
    [
      '[client]',
      `server = "http://127.0.0.1:${clientPort}"`,
      'auth = "agent:agent-password-1"',
      `id = "${CLIENT_ID}"`,
      `fingerprint = "${fingerprint}"`,
      'data_dir = "agent-data"',
      '[remote-commands]',
      'enabled = true',
    ].join('\n'),
  );
  agent = startExecutable(agentFile, ['-c', agentConf], {
    cwd: dir,
    env: { PATH: join(dir, 'bin'), SVC_AUTH: undefined, NODE_OPTIONS: undefined },
  });
  await agent.waitForLog('connected to svcd');
});

afterAll(async () => {
  await agent?.stop();
  await svcd?.stop();
  echo?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the one-file agent', () => {
  test('runs as its own executable, not through node, with no node_modules near it', async () => {
    expect(await readlink(`/proc/${agent!.child.pid}/exe`)).toBe(agentFile);
    for (let up = dir; up !== '/'; up = join(up, '..'))
      expect(existsSync(join(up, 'node_modules'))).toBe(false);
    expect(agent!.stderr).toBe('');
  });

  test('a tunnel through it carries bytes both ways', async () => {
    const echoPort = (echo!.address() as AddressInfo).port;
    const res = await api.request('PUT', `/clients/${CLIENT_ID}/tunnels?remote=127.0.0.1:${echoPort}`, {
      auth: ADMIN,
    });
    expect(res.status, res.text).toBe(200);
    const lport = Number(res.json.data.lport);
    const text = 'through the one-file agent\n'.repeat(5000);
    expect(await roundTrip(lport, text)).toBe(text);
  });

  test('it runs a remote command', async () => {
    const res = await api.post(
      `/clients/${CLIENT_ID}/commands`,
      { command: '/usr/bin/echo hi' },
      { auth: ADMIN },
    );
    expect(res.status, res.text).toBe(200);
    const jid = res.json.data.jid as string;
    const deadline = Date.now() + 20_000;
    for (;;) {
      const view = (await api.get(`/clients/${CLIENT_ID}/commands/${jid}`, { auth: ADMIN })).json.data;
      if (view.status !== 'running') {
        expect(view, view.error as string).toMatchObject({
          status: 'successful',
          exit_code: 0,
          result: { stdout: 'hi\n' },
        });
        break;
      }
      if (Date.now() > deadline) throw new Error(`job ${jid} still running after 20 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  });
});
