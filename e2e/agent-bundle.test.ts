/**
 * `svc` runs one bundle (packages/agent/dist/svc.cjs) that loads the native addons from node_modules when they are
 * there. Here the bundle runs with no node_modules around it, so no addon loads: ssh2 must fall back to node's
 * crypto (the bundle leaves out its poly1305 WebAssembly; the agent never offers chacha20-poly1305) and still
 * connect and carry a tunnel.
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import type { AddressInfo, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { AGENT_BUNDLE } from '../scripts/agent-bundle.js';
import type { ApiClient } from '../test-support/api-client.js';
import { startE2eSvcd } from '../test-support/e2e-setup.js';
import { freePort, startExecutable, type RunningProcess } from '../test-support/process.js';
import { roundTrip, startEchoServer } from '../test-support/tcp.js';

const ADMIN = { basic: ['admin', 'admin-secret-1'] as [string, string] };
const CLIENT_ID = 'bundle-alone';

let dir: string;
let api: ApiClient;
let svcd: RunningProcess | undefined;
let agent: RunningProcess | undefined;
let echo: Server | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-bundle-'));
  await copyFile(AGENT_BUNDLE, join(dir, 'svc.cjs'));
  echo = await startEchoServer();
  const [apiPort, clientPort] = [await freePort(), await freePort()];
  const started = await startE2eSvcd(dir, {
    clientPort,
    apiPort,
    keySeed: 'e2e-bundle-seed',
    server: ['auth = "agent:agent-password-1"'],
  });
  ({ svcd, api } = started);
  const { fingerprint } = started;
  agent = startExecutable(
    process.execPath,
    [
      ...[join(dir, 'svc.cjs'), '--auth', 'agent:agent-password-1', '--id', CLIENT_ID],
      ...[
        '--fingerprint',
        fingerprint,
        '--data-dir',
        join(dir, 'agent-data'),
        `http://127.0.0.1:${clientPort}`,
      ],
    ],
    { cwd: dir, env: { SVC_AUTH: undefined, NODE_OPTIONS: undefined, NODE_PATH: undefined } },
  );
  await agent.waitForLog('connected to svcd');
});

afterAll(async () => {
  await agent?.stop();
  await svcd?.stop();
  echo?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('the bundle alone, without its native addons, connects and carries a tunnel', async () => {
  for (let up = dir; up !== '/'; up = join(up, '..'))
    expect(existsSync(join(up, 'node_modules'))).toBe(false);
  const echoPort = (echo!.address() as AddressInfo).port;
  const res = await api.request('PUT', `/clients/${CLIENT_ID}/tunnels?remote=127.0.0.1:${echoPort}`, {
    auth: ADMIN,
  });
  expect(res.status, res.text).toBe(200);
  const text = 'through the bundle alone\n'.repeat(5000);
  expect(await roundTrip(Number(res.json.data.lport), text)).toBe(text);
  expect(agent!.stderr).toBe('');
});

test('the bundle leaves out the parts of ssh2 an agent never runs', async () => {
  const bundle = await readFile(AGENT_BUNDLE, 'utf8');
  // A string of each original module: SFTP, ssh-agent authentication, bcrypt-pbkdf (with tweetnacl).
  for (const marker of ['SFTP: Outbound', 'Pageant', 'OxychromaticBlowfishSwatDynamite'])
    expect(bundle).not.toContain(marker);
  expect(bundle).toContain('SFTP is left out of the svc agent');
  // Minified names: splice() finds ssh2's finish listener without its name (the tunnel test above relies on it).
  expect(bundle).not.toMatch(/function onFinish\(/);
});
