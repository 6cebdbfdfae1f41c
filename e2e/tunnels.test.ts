/**
 * Tunnels across restarts of svcd, with real svcd and svc processes: the definitions are stored, and when the
 * agent is back the tunnels listen again on the same ports, with the same ids, and carry bytes.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { tunnelSchema, type TunnelData } from '../packages/protocol/src/index.js';
import { svcdFingerprint, writeAdminUserFile, writeSvcdConfig } from '../test-support/e2e-setup.js';
import { roundTrip, startEchoServer } from '../test-support/tcp.js';
import { createApiClient, type ApiClient } from '../test-support/api-client.js';
import {
  SVCD_BIN,
  SVC_BIN,
  freePort,
  freePortBlock,
  parseLog,
  startProcess,
  type RunningProcess,
} from '../test-support/process.js';

const ADMIN = { basic: ['admin', 'admin-secret-1'] as [string, string] };
const CLIENT_ID = 'tunnel-host';

let dir: string;
let configPath: string;
let api: ApiClient;
let svcd: RunningProcess | undefined;
let agent: RunningProcess | undefined;
let echo: Server;
let echoPort: number;
/** The tunnel pool: two ports. */
let pool: [number, number];

async function startSvcd(): Promise<RunningProcess> {
  const proc = startProcess(SVCD_BIN, ['-c', configPath]);
  svcd = proc;
  await proc.waitForLog('API listening');
  return proc;
}

/** Waits until svcd logged `count` lines with this message (bounded by waitForLine's timeout). */
const logged = (proc: RunningProcess, msg: string, count: number) =>
  proc.waitForLine(() => proc.stdoutLines.filter((line) => parseLog(line)?.msg === msg).length >= count);

async function tunnelsOf(clientId: string): Promise<TunnelData[]> {
  const res = await api.get(`/clients/${clientId}`, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return (res.json.data.tunnels as unknown[]).map((t) => tunnelSchema.parse(t));
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-tunnels-'));
  const [apiPort, clientPort, base] = [await freePort(), await freePort(), await freePortBlock(2)];
  pool = [base, base + 1];
  echo = await startEchoServer();
  echoPort = (echo.address() as AddressInfo).port;
  await writeAdminUserFile(dir);
  await writeFile(join(dir, 'clients-auth.json'), JSON.stringify({ 'tunnel-agent': 'password-t-1' }));
  configPath = await writeSvcdConfig(dir, {
    clientPort,
    apiPort,
    keySeed: 'e2e-tunnels-seed',
    server: [
      'auth_file = "clients-auth.json"',
      'keepalive_interval = "2s"',
      `used_ports = ["${pool[0]}-${pool[1]}"]`,
    ],
  });
  await startSvcd();
  api = createApiClient(`http://127.0.0.1:${apiPort}/api/v1`);
  const fingerprint = await svcdFingerprint(api);
  agent = startProcess(SVC_BIN, [
    ...['--auth', 'tunnel-agent:password-t-1', '--id', CLIENT_ID, '--fingerprint', fingerprint],
    ...['--data-dir', join(dir, 'agent'), `http://127.0.0.1:${clientPort}`],
  ]);
  await logged(svcd!, 'client connected', 1);
});

afterAll(async () => {
  await agent?.stop();
  await svcd?.stop();
  echo?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('tunnels with real svcd and svc processes', () => {
  test('after kill -9 and a restart of svcd the tunnels are back: same ids, ports and urls; bytes go through', async () => {
    const put = async (query: Record<string, string>) => {
      const res = await api.request(
        'PUT',
        `/clients/${CLIENT_ID}/tunnels?${new URLSearchParams(query).toString()}`,
        {
          auth: ADMIN,
        },
      );
      expect(res.status, res.text).toBe(200);
      return tunnelSchema.parse(res.json.data);
    };
    // The explicit port first, so the pool-picked one gets the other port of the pool.
    const explicit = await put({
      remote: String(echoPort),
      local: `127.0.0.1:${pool[1]}`,
      scheme: '',
      acl: '127.0.0.1',
      'auto-close': '1h',
    });
    const picked = await put({
      remote: `127.0.0.1:${echoPort}`,
      scheme: 'http',
      'skip-idle-timeout': 'true',
    });
    expect(explicit).toMatchObject({ id: '1', lport: String(pool[1]), scheme: null, tunnel_url: null });
    expect(picked).toMatchObject({
      id: '2',
      lport: String(pool[0]),
      scheme: 'http',
      tunnel_url: `http://127.0.0.1:${pool[0]}`,
    });
    expect(await tunnelsOf(CLIENT_ID)).toEqual([explicit, picked]);
    expect(await roundTrip(pool[0], 'before')).toBe('before');

    const killed = svcd!;
    killed.child.kill('SIGKILL');
    await killed.exited;
    const restarted = await startSvcd();
    await logged(restarted, 'tunnel re-opened', 2);
    expect(await tunnelsOf(CLIENT_ID)).toEqual([explicit, picked]);
    expect(await roundTrip(pool[0], 'after, pool port')).toBe('after, pool port');
    expect(await roundTrip(pool[1], 'after, explicit port')).toBe('after, explicit port');

    // A deleted tunnel stays deleted across the next restart (SIGTERM this time).
    const deleted = await api.request('DELETE', `/clients/${CLIENT_ID}/tunnels/${explicit.id}`, {
      auth: ADMIN,
    });
    expect(deleted.status).toBe(204);
    restarted.child.kill('SIGTERM');
    await restarted.exited;
    const again = await startSvcd();
    await logged(again, 'tunnel re-opened', 1);
    await logged(again, 'client connected', 1);
    expect(await tunnelsOf(CLIENT_ID)).toEqual([picked]);
    expect(await roundTrip(pool[0], 'still there')).toBe('still there');
    const next = await put({ remote: String(echoPort), acl: '::1' });
    expect(next.id).toBe('3');
  }, 120_000);
});
