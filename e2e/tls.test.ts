import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hash } from '@node-rs/bcrypt';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { makeTestCertificates, type TestCertificates } from '../test-support/certificates.js';
import {
  SVCD_BIN,
  SVC_BIN,
  freePort,
  parseLog,
  runProcess,
  startProcess,
  type RunningProcess,
} from '../test-support/process.js';
import { writeSvcdConfig } from '../test-support/e2e-setup.js';

const EXIT_CONFIG = 78;
const EXIT_USAGE = 64;
const SEED = 'e2e-tls-seed';

let dir: string;
let certs: TestCertificates;
let otherCa: TestCertificates;
let svcd: RunningProcess;
let agentUrl: string;
let fingerprint: string;
const agents: RunningProcess[] = [];

function agent(args: string[]): RunningProcess {
  const proc = startProcess(SVC_BIN, ['--auth', 'tls-agent:tls-password-1', ...args], {
    env: { SVC_AUTH: undefined },
  });
  agents.push(proc);
  return proc;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-tls-'));
  certs = await makeTestCertificates(dir, 'svcd');
  otherCa = await makeTestCertificates(dir, 'other');
  const [apiPort, clientPort] = [await freePort(), await freePort()];
  agentUrl = `https://127.0.0.1:${clientPort}`;
  const users = [{ username: 'admin', password: await hash('admin-secret-1', { cost: 4 }), groups: [] }];
  await writeFile(join(dir, 'users.json'), JSON.stringify(users));
  await writeFile(join(dir, 'clients-auth.json'), JSON.stringify({ 'tls-agent': 'tls-password-1' }));
  await writeSvcdConfig(dir, {
    clientPort,
    apiPort,
    keySeed: SEED,
    server: [
      'auth_file = "clients-auth.json"',
      // Relative to the config file's folder.
      'tls_cert = "svcd-server.crt"',
      'tls_key = "svcd-server.key"',
    ],
    api: ['cert_file = "svcd-server.crt"', 'key_file = "svcd-server.key"'],
  });
  svcd = startProcess(SVCD_BIN, ['-c', join(dir, 'svcd.conf')]);
  const listener = await svcd.waitForLog('client listener started');
  fingerprint = String(listener.fingerprint);
  expect(listener).toMatchObject({ tls: true, tls_min: 'TLSv1.3', cert_subject: 'CN=localhost' });
  const api = await svcd.waitForLog('API listening');
  expect(api).toMatchObject({ tls: true, url: `https://127.0.0.1:${apiPort}/api/v1` });
});

afterAll(async () => {
  for (const proc of agents) await proc.stop();
  await svcd?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('an agent over wss', () => {
  test('connects with --tls-ca and the pinned fingerprint', async () => {
    const proc = agent([
      '--tls-ca',
      certs.caCert,
      '--fingerprint',
      fingerprint,
      '--data-dir',
      join(dir, 'a'),
      agentUrl,
    ]);
    const connected = await proc.waitForLog('connected to svcd');
    expect(connected).toMatchObject({ server: `wss://127.0.0.1:${agentUrl.split(':')[2]}/`, fingerprint });
    const starting = proc.stdoutLines.map(parseLog).find((log) => log?.msg === 'svc starting');
    expect(starting).toMatchObject({ tls_ca: certs.caCert });
  });

  test('the fingerprint is still checked over TLS', async () => {
    const proc = agent([
      '--tls-ca',
      certs.caCert,
      '--fingerprint',
      '00:11',
      '--data-dir',
      join(dir, 'b'),
      agentUrl,
    ]);
    const line = await proc.waitForLine((l) => /host key fingerprint is/.test(parseLog(l)?.msg ?? ''));
    expect(parseLog(line)?.msg).toContain('refusing to connect');
  });

  test('a certificate from another CA is refused with a message naming the CA file', async () => {
    const proc = agent(['--tls-ca', otherCa.caCert, '--data-dir', join(dir, 'c'), agentUrl]);
    const line = await proc.waitForLine((l) => /TLS certificate/.test(parseLog(l)?.msg ?? ''));
    const log = parseLog(line);
    expect(log?.level).toBe('error');
    expect(log?.msg).toContain(`is not signed by the CA in ${otherCa.caCert} (--tls-ca)`);
    expect(log?.msg).toContain('refusing to connect');
    expect(proc.stdoutLines.some((l) => parseLog(l)?.msg === 'connected to svcd')).toBe(false);
  });

  test('without --tls-ca the system CAs are used, and the message says how to add one', async () => {
    const proc = agent(['--data-dir', join(dir, 'd'), agentUrl]);
    const line = await proc.waitForLine((l) => /TLS certificate/.test(parseLog(l)?.msg ?? ''));
    expect(parseLog(line)?.msg).toMatch(
      /not signed by the system's trusted CAs .*pass the CA that signed it with --tls-ca FILE or \[client\] tls_ca/,
    );
  });

  test('an agent with http:// on the TLS port hears that it may need https://', async () => {
    const proc = agent(['--data-dir', join(dir, 'e'), agentUrl.replace('https:', 'http:')]);
    const line = await proc.waitForLine((l) => /cannot connect to svcd/.test(parseLog(l)?.msg ?? ''));
    expect(parseLog(line)?.msg).toContain("if svcd's [server] sets tls_cert, use https://");
  });
});

describe('start-up failures exit with a code systemd does not restart on, and one line saying why', () => {
  test('svc: a missing --tls-ca file exits 78 naming the flag', async () => {
    const missing = join(dir, 'missing-ca.pem');
    const result = await runProcess(SVC_BIN, ['--auth', 'a:b', '--tls-ca', missing, agentUrl]);
    expect(result.code).toBe(EXIT_CONFIG);
    expect(result.stderr).toBe(`svc: --tls-ca: cannot read ${missing}: the file does not exist\n`);
  });

  test('svc: a CA with a plain http:// server exits 78', async () => {
    const result = await runProcess(SVC_BIN, [
      '--auth',
      'a:b',
      '--tls-ca',
      certs.caCert,
      'http://127.0.0.1:1',
    ]);
    expect(result.code).toBe(EXIT_CONFIG);
    expect(result.stderr).toMatch(
      /^svc: --tls-ca: a CA is only used for TLS; give the server address as https:/,
    );
  });

  test('svc: an unknown flag exits 64', async () => {
    const result = await runProcess(SVC_BIN, ['--no-such-flag']);
    expect(result.code).toBe(EXIT_USAGE);
    expect(result.stderr).toContain("unknown option '--no-such-flag'");
  });

  test('svcd: an unreadable certificate exits 78 naming the key', async () => {
    const config = join(dir, 'broken.conf');
    await writeFile(
      config,
      [
        '[server]',
        'address = "127.0.0.1:0"',
        'data_dir = "broken-data"',
        '[api]',
        'address = "127.0.0.1:0"',
        'auth = "admin:secret-pass-1"',
        'cert_file = "no-such.crt"',
        'key_file = "svcd-server.key"',
      ].join('\n'),
    );
    const result = await runProcess(SVCD_BIN, ['-c', config]);
    expect(result.code).toBe(EXIT_CONFIG);
    expect(result.stderr).toContain(
      `[api] cert_file: cannot read ${join(dir, 'no-such.crt')}: the file does not exist`,
    );
    expect(parseLog(result.stdout.split('\n').at(-1) ?? '')).toMatchObject({
      msg: 'start failed',
      level: 'error',
    });
  });

  test('svcd: --version prints the version and exits 0; an unknown flag exits 64', async () => {
    const version = await runProcess(SVCD_BIN, ['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+/);
    const unknown = await runProcess(SVCD_BIN, ['--no-such-flag']);
    expect(unknown.code).toBe(EXIT_USAGE);
  });

  test('svc --version prints the version and exits 0', async () => {
    const version = await runProcess(SVC_BIN, ['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+/);
  });
});
