import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { RunningProcess, SVC_BIN, parseLog } from '../../../test-support/process.js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

// These run the built `svc` (bin/svc.js → dist/svc.cjs, bundled from dist/ by vitest's global setup): run
// `npx tsc -b` first.

let svcd: TestServer;
let dir: string;

beforeAll(async () => {
  svcd = await startTestServer({
    store: 'static',
    server: { auth: 'client1:pass-1234', client_login_wait: 0 },
  });
  dir = await mkdtemp(join(tmpdir(), 'svc-process-'));
});

afterAll(async () => {
  await svcd.stop();
  await rm(dir, { recursive: true, force: true });
});

function svc(args: string[], env: Record<string, string> = {}): RunningProcess {
  const { SVC_AUTH: _ignored, ...inherited } = process.env;
  const child = spawn(process.execPath, [SVC_BIN, ...args], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...inherited, ...env },
  });
  return new RunningProcess(child);
}

test('--help exits 0 and lists the flags', async () => {
  const proc = svc(['--help']);
  expect((await proc.exited).code).toBe(0);
  const help = proc.stdoutLines.join('\n');
  for (const flag of ['--auth', '--fingerprint', '--tag', '--label', '--data-dir', '--config', '--log-level'])
    expect(help).toContain(flag);
});

test('missing credentials and a malformed --auth exit 78 (configuration) with a message', async () => {
  const missing = svc(['127.0.0.1:1']);
  expect((await missing.exited).code).toBe(78);
  expect(missing.stderr).toMatch(/^svc: no credentials: pass --auth/);
  const malformed = svc(['--auth', 'client1', '127.0.0.1:1']);
  expect((await malformed.exited).code).toBe(78);
  expect(malformed.stderr).toMatch(/^svc: --auth: must be <client-auth-id>:<password>/);
});

test('a config file error exits 78 naming the key', async () => {
  const path = join(dir, 'bad.conf');
  await writeFile(path, '[client]\nserver = "http://h:1"\nauth = "a:b"\n[connection]\nkeepalive = "1s"\n');
  const proc = svc(['-c', path]);
  expect((await proc.exited).code).toBe(78);
  expect(proc.stderr).toContain('[connection] keepalive: unknown key');
});

test('connects with SVC_AUTH, keeps its id in the data dir, and exits 0 on SIGTERM', async () => {
  const dataDir = join(dir, 'data');
  const proc = svc(
    [
      '--fingerprint',
      svcd.server.fingerprint,
      '--data-dir',
      dataDir,
      '--tag',
      'proc',
      `http://127.0.0.1:${svcd.server.clientPort}`,
    ],
    { SVC_AUTH: 'client1:pass-1234' },
  );
  try {
    const connected = await proc.waitForLog('connected to svcd');
    const clientId = (await readFile(join(dataDir, 'client-id'), 'utf8')).trim();
    expect(connected).toMatchObject({ client_id: clientId, fingerprint: svcd.server.fingerprint });
    const started = proc.stdoutLines.map(parseLog).find((line) => line?.msg === 'svc starting');
    expect(started).toMatchObject({ credentials_from: 'SVC_AUTH', auth_id: 'client1' });
    expect(proc.stdoutLines.join('\n')).not.toContain('pass-1234');
    expect(svcd.server.clients.get(clientId)?.tags).toEqual(['proc']);
    proc.child.kill('SIGTERM');
    expect(await proc.exited).toEqual({ code: 0, signal: null });
  } finally {
    await proc.stop();
  }
});
