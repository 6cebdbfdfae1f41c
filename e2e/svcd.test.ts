import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hash } from '@node-rs/bcrypt';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { writeAdminUserFile, startSvcdProcess } from '../test-support/e2e-setup.js';
import { createApiClient } from '../test-support/api-client.js';
import {
  SVCD_BIN,
  SVC_BIN,
  freePort,
  parseLog,
  runProcess,
  startProcess,
  type RunningProcess,
} from '../test-support/process.js';

let dir: string;
let proc: RunningProcess | undefined;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svcd-e2e-'));
});
afterEach(async () => {
  await proc?.stop();
  proc = undefined;
  await rm(dir, { recursive: true, force: true });
});

function startQuickstart(dataDir: string, apiPort: number): RunningProcess {
  return startProcess(SVCD_BIN, [
    'quickstart',
    '--data-dir',
    dataDir,
    '--api-address',
    `127.0.0.1:${apiPort}`,
    '--address',
    '127.0.0.1:0',
  ]);
}

async function adminPasswordOf(quickstart: RunningProcess): Promise<string> {
  const loginLine = await quickstart.waitForLine((l) => l.includes('Admin login:'));
  const password = /Admin login:\s+admin \/ (\S+)/.exec(loginLine)?.[1];
  if (password === undefined) throw new Error(`no password in: ${loginLine}`);
  return password;
}

async function writeSetup(apiPort: number) {
  await writeAdminUserFile(dir);
  const config = [
    '[server]',
    'address = "127.0.0.1:0"',
    'data_dir = "data"',
    'key_seed = "Z4mQqmkDnexNNR4giNU3Me"',
    '[api]',
    `address = "127.0.0.1:${apiPort}"`,
    'auth_file = "users.json"',
    '[logging]',
    'log_level = "info"',
  ].join('\n');
  const configPath = join(dir, 'svcd.conf');
  await writeFile(configPath, config);
  return configPath;
}

describe('the svcd process', () => {
  test('starts from a config file, serves /status, reloads users on SIGUSR1 and stops on SIGTERM', async () => {
    const apiPort = await freePort();
    const configPath = await writeSetup(apiPort);
    proc = startProcess(SVCD_BIN, ['-c', configPath]);
    const listening = await proc.waitForLog('API listening');
    expect(listening.url).toBe(`http://127.0.0.1:${apiPort}/api/v1`);
    const clientLog = await proc.waitForLog('client listener started');
    expect(clientLog.fingerprint).toBe('5d:b3:ee:37:b2:31:cc:ce:93:d4:69:21:16:5d:36:11');

    const api = createApiClient(`http://127.0.0.1:${apiPort}/api/v1`);
    const status = await api.get('/status', { auth: { basic: ['admin', 'admin-secret-1'] } });
    expect(status.status).toBe(200);
    expect(status.json.data.fingerprint).toBe('5d:b3:ee:37:b2:31:cc:ce:93:d4:69:21:16:5d:36:11');
    expect(status.json.data.version).toMatch(/^\d+\.\d+\.\d+/);

    // A user added to the file by hand works after SIGUSR1.
    const users = JSON.parse(await readFile(join(dir, 'users.json'), 'utf8')) as unknown[];
    users.push({ username: 'bob', password: await hash('bob-secret-1', { cost: 4 }), groups: [] });
    await writeFile(join(dir, 'users.json'), JSON.stringify(users));
    const listed = async () =>
      (
        (await api.get('/users', { auth: { basic: ['admin', 'admin-secret-1'] } })).json as {
          data: { username: string }[];
        }
      ).data.map((u) => u.username);
    expect(await listed()).toEqual(['admin']);
    proc.child.kill('SIGUSR1');
    await proc.waitForLog('user file reloaded');
    expect(await listed()).toEqual(['admin', 'bob']);
    expect((await api.get('/status', { auth: { basic: ['bob', 'bob-secret-1'] } })).status).toBe(200);

    // The SQLite database lives in data_dir, relative to the config file.
    await readFile(join(dir, 'data', 'svcd.db'));

    proc.child.kill('SIGTERM');
    const exit = await proc.exited;
    expect(exit.code).toBe(0);
    await proc.waitForLog('stopped');
  });

  test('a broken user file on SIGUSR1 keeps the users loaded before', async () => {
    const apiPort = await freePort();
    const configPath = await writeSetup(apiPort);
    proc = await startSvcdProcess(configPath);
    await writeFile(join(dir, 'users.json'), '[{"username": "broken"');
    proc.child.kill('SIGUSR1');
    await proc.waitForLog('user file reload failed; keeping the users loaded before');
    const api = createApiClient(`http://127.0.0.1:${apiPort}/api/v1`);
    expect((await api.get('/status', { auth: { basic: ['admin', 'admin-secret-1'] } })).status).toBe(200);
  });

  test('without [api] address svcd runs the agent listener alone, with no user store configured', async () => {
    const configPath = join(dir, 'agents-only.conf');
    await writeFile(
      configPath,
      ['[server]', 'address = "127.0.0.1:0"', 'data_dir = "data"', 'auth = "edge-1:edge-password-1"'].join(
        '\n',
      ),
    );
    proc = startProcess(SVCD_BIN, ['-c', configPath]);
    const listener = await proc.waitForLog('client listener started');
    await proc.waitForLog('API disabled: set [api] address to enable it');
    const port = Number(listener.port);
    const agent = startProcess(SVC_BIN, [
      ...['--auth', 'edge-1:edge-password-1', '--id', 'edge', '--fingerprint', String(listener.fingerprint)],
      ...['--data-dir', join(dir, 'svc'), `http://127.0.0.1:${port}`],
    ]);
    try {
      await agent.waitForLog('connected to svcd');
      await proc.waitForLog('client connected');
    } finally {
      await agent.stop();
    }
  });

  test('a config written for OpenRPort starts, with a warning naming each key svcd ignores', async () => {
    const configPath = join(dir, 'rportd.conf');
    await writeFile(
      configPath,
      [
        '[server]',
        'address = "127.0.0.1:0"',
        'data_dir = "data"',
        'auth = "edge-1:edge-password-1"',
        'allow_root = false',
        'jobs_max_results = 10000',
        '[monitoring]',
        'enabled = true',
      ].join('\n'),
    );
    proc = startProcess(SVCD_BIN, ['-c', configPath]);
    await proc.waitForLog('client listener started');
    for (const key of ['[server] allow_root', '[server] jobs_max_results', '[monitoring]'])
      await proc.waitForStderr(`svcd: warning: ${configPath}: ${key}: OpenRPort setting not implemented`);
  });

  test('a start removes the side files that killed writes left next to the user and credential files', async () => {
    const apiPort = await freePort();
    const configPath = await writeSetup(apiPort);
    await writeFile(
      configPath,
      (await readFile(configPath, 'utf8')).replace(
        'data_dir = "data"',
        'data_dir = "data"\nauth_file = "clients-auth.json"',
      ),
    );
    await writeFile(join(dir, 'clients-auth.json'), '{"client-1": "client-secret-1"}');
    // A writer that has exited, as one killed with SIGKILL between write and rename.
    const deadPid = spawnSync(process.execPath, ['-e', '']).pid;
    const leftovers = [`users.json.${deadPid}.tmp`, `clients-auth.json.${deadPid}.tmp`];
    const kept = [
      `users.json.${process.pid}.tmp`, // a writer that still runs
      'users.json.backup.tmp',
      'users.json.12ab.tmp',
      `other.json.${deadPid}.tmp`,
      `users.json.${deadPid}.tmp.keep`,
    ];
    for (const name of [...leftovers, ...kept]) await writeFile(join(dir, name), '[{"username": "half');

    proc = await startSvcdProcess(configPath);
    const cleaned = proc.stdoutLines
      .map(parseLog)
      .filter((l) => l?.msg === 'removed side files of interrupted writes');
    expect(cleaned.map((l) => l?.removed)).toEqual([
      [join(dir, leftovers[0] ?? '')],
      [join(dir, leftovers[1] ?? '')],
    ]);
    const left = await readdir(dir);
    for (const name of leftovers) expect(left).not.toContain(name);
    for (const name of kept) expect(left).toContain(name);
    const api = createApiClient(`http://127.0.0.1:${apiPort}/api/v1`);
    expect((await api.get('/status', { auth: { basic: ['admin', 'admin-secret-1'] } })).status).toBe(200);
  });

  test('a bad config stops the start with a message naming the key and a non-zero exit', async () => {
    const configPath = join(dir, 'bad.conf');
    await writeFile(configPath, '[api]\naddress = "127.0.0.1:3000"\nmax_failed_login = "ten"\nbogus = 1\n');
    const result = await runProcess(SVCD_BIN, ['-c', configPath]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/\[api\] max_failed_login/);
    expect(result.stderr).toMatch(/\[api\] bogus/);
  });

  test('a port in use stops the start naming [api] address', async () => {
    const apiPort = await freePort();
    const configPath = await writeSetup(apiPort);
    const first = startProcess(SVCD_BIN, ['-c', configPath]);
    try {
      await first.waitForLog('API listening');
      const second = await runProcess(SVCD_BIN, ['-c', configPath]);
      expect(second.code).not.toBe(0);
      expect(second.stderr).toMatch(
        /\[api\] address: cannot listen on 127\.0\.0\.1:\d+: the address is already in use/,
      );
    } finally {
      await first.stop();
    }
  });

  test('svcd user add/change/delete write the user file; -p reads stdin when it is not a terminal', async () => {
    const configPath = await writeSetup(await freePort());
    const add = await runProcess(
      SVCD_BIN,
      ['user', 'add', '-u', 'carol', '-p', '-g', 'Ops', '-g', 'Dev', '-c', configPath],
      {
        stdin: 'carol-secret-1\n',
      },
    );
    expect(add.stderr).toBe('');
    expect(add.code).toBe(0);
    expect(add.stdout).toMatch(/user 'carol' added/);
    const saved = JSON.parse(await readFile(join(dir, 'users.json'), 'utf8')) as {
      username: string;
      password: string;
      groups: string[];
    }[];
    const carol = saved.find((u) => u.username === 'carol');
    expect(carol?.groups).toEqual(['Ops', 'Dev']);
    expect(carol?.password).toMatch(/^\$2[aby]\$10\$/);

    const change = await runProcess(SVCD_BIN, [
      'user',
      'change',
      '-u',
      'carol',
      '-g',
      'Auditors',
      '-c',
      configPath,
    ]);
    expect(change.code).toBe(0);
    const changed = JSON.parse(await readFile(join(dir, 'users.json'), 'utf8')) as {
      username: string;
      groups: string[];
    }[];
    expect(changed.find((u) => u.username === 'carol')?.groups).toEqual(['Auditors']);

    const lastAdmin = await runProcess(SVCD_BIN, ['user', 'delete', '-u', 'admin', '-c', configPath]);
    expect(lastAdmin.code).not.toBe(0);
    expect(lastAdmin.stderr).toMatch(/last member of Administrators/);

    const del = await runProcess(SVCD_BIN, ['user', 'delete', '-u', 'carol', '-c', configPath]);
    expect(del.code).toBe(0);
    const after = JSON.parse(await readFile(join(dir, 'users.json'), 'utf8')) as { username: string }[];
    expect(after.map((u) => u.username)).toEqual(['admin']);
  });

  test('quickstart creates a working setup and prints the admin login and the svc command', async () => {
    const apiPort = await freePort();
    const dataDir = join(dir, 'qs');
    proc = startQuickstart(dataDir, apiPort);
    const consoleLine = await proc.waitForLine((l) => l.includes('Web console:'));
    expect(consoleLine).toContain(`http://127.0.0.1:${apiPort}/`);
    const password = await adminPasswordOf(proc);
    const svcLine = await proc.waitForLine((l) => l.includes('Connect an agent:'));
    expect(svcLine).toMatch(
      /svc --auth client-[0-9a-f]{6}:\S+ --fingerprint ([0-9a-f]{2}:){15}[0-9a-f]{2} http:\/\/127\.0\.0\.1:\d+/,
    );
    const api = createApiClient(`http://127.0.0.1:${apiPort}/api/v1`);
    expect((await api.get('/status', { auth: { basic: ['admin', password] } })).status).toBe(200);
    const credentials = JSON.parse(await readFile(join(dataDir, 'clients-auth.json'), 'utf8')) as Record<
      string,
      string
    >;
    expect(Object.keys(credentials)).toHaveLength(1);
    const config = await readFile(join(dataDir, 'svcd.conf'), 'utf8');
    expect(config).toMatch(/^auth_user_table = "users"$/m);
    expect(config).toMatch(/^auth_group_table = "groups"$/m);
    expect(config).not.toMatch(/^auth_file = "users.json"$/m);
    expect(await readdir(dataDir)).not.toContain('users.json');
  });

  test('quickstart users live in the database: API changes apply at once, also for a deleted admin', async () => {
    const apiPort = await freePort();
    proc = startQuickstart(join(dir, 'qs'), apiPort);
    const password = await adminPasswordOf(proc);
    const api = createApiClient(`http://127.0.0.1:${apiPort}/api/v1`);
    const asAdmin = { auth: { basic: ['admin', password] as [string, string] } };
    const asSecond = { auth: { basic: ['second', 'second-secret-1'] as [string, string] } };

    const created = await api.post(
      '/users',
      { username: 'second', password: 'second-secret-1', groups: ['Administrators'] },
      asAdmin,
    );
    expect(created.status).toBe(201);
    expect(created.json).toEqual({ data: { username: 'second', groups: ['Administrators'] } });
    expect((await api.get('/users', asSecond)).status).toBe(200);

    const adminToken = await api.login('admin', password);
    const deleted = await api.delete('/users/admin', asSecond);
    expect([deleted.status, deleted.text]).toEqual([204, '']);
    expect((await api.get('/status', asAdmin)).status).toBe(401);
    expect((await api.get('/status', { auth: { bearer: adminToken } })).status).toBe(401);
    expect((await api.get('/users', asSecond)).json.data).toEqual([
      { username: 'second', groups: ['Administrators'], two_fa: { enabled: false, method: null } },
    ]);
  });

  test('a quickstart folder of the earlier version, with users.json, keeps working unchanged', async () => {
    const apiPort = await freePort();
    const dataDir = join(dir, 'old');
    await mkdir(dataDir);
    const users = [
      {
        username: 'admin',
        password: await hash('old-admin-secret', { cost: 4 }),
        groups: ['Administrators'],
      },
    ];
    await writeFile(join(dataDir, 'users.json'), JSON.stringify(users, null, 2) + '\n');
    await writeFile(join(dataDir, 'clients-auth.json'), '{"client-0a0b0c":"old-client-secret"}\n');
    const oldConfig = [
      "# Generated by 'svcd quickstart' on 2025-01-01T00:00:00.000Z.",
      '',
      '[server]',
      'address = "127.0.0.1:0"',
      'data_dir = "."',
      'key_seed = "Z4mQqmkDnexNNR4giNU3Me"',
      'auth_file = "clients-auth.json"',
      '',
      '[api]',
      `address = "127.0.0.1:${apiPort}"`,
      'auth_file = "users.json"',
      '',
      '[database]',
      'db_type = "sqlite"',
      '',
    ].join('\n');
    await writeFile(join(dataDir, 'svcd.conf'), oldConfig);
    proc = startProcess(SVCD_BIN, ['quickstart', '--data-dir', dataDir]);
    const configLine = await proc.waitForLine((l) => l.includes('Config:'));
    expect(configLine).toMatch(/existing setup; users in \S*users\.json/);
    expect(proc.stdoutLines.join('\n')).not.toMatch(/Admin login/);
    expect(await readFile(join(dataDir, 'svcd.conf'), 'utf8')).toBe(oldConfig);

    const api = createApiClient(`http://127.0.0.1:${apiPort}/api/v1`);
    const asAdmin = { auth: { basic: ['admin', 'old-admin-secret'] as [string, string] } };
    expect((await api.get('/status', asAdmin)).status).toBe(200);
    // The user file still waits for a reload, and the answers say so.
    await api.post('/users', { username: 'second', password: 'second-secret-1' }, asAdmin);
    const changed = await api.put('/users/second', { groups: ['Ops'] }, asAdmin);
    expect(changed.status).toBe(200);
    expect(changed.json.meta.takes_effect).toMatch(/reload.*SIGUSR1.*restart/);
  });

  test('quickstart --api-address/--address on a later run are written into the stored config', async () => {
    const dataDir = join(dir, 'qs');
    const firstPort = await freePort();
    proc = startQuickstart(dataDir, firstPort);
    await adminPasswordOf(proc);
    proc.child.kill('SIGTERM');
    expect((await proc.exited).code).toBe(0);
    const configPath = join(dataDir, 'svcd.conf');
    const before = await readFile(configPath, 'utf8');
    await writeFile(configPath, before.replace('[api]\n', '[api]\n# kept: a comment of my own\n'));

    const secondPort = await freePort();
    proc = startProcess(SVCD_BIN, [
      'quickstart',
      '--data-dir',
      dataDir,
      '--api-address',
      `127.0.0.1:${secondPort}`,
      '--address',
      '127.0.0.1:0',
    ]);
    const notice = await proc.waitForLine((l) => l.startsWith('quickstart: [api] address'));
    expect(notice).toBe(
      `quickstart: [api] address changed from 127.0.0.1:${firstPort} to 127.0.0.1:${secondPort} in ${configPath}`,
    );
    await proc.waitForLine((l) => l.includes('svcd is running.'));
    // The agent address was given as it is stored: nothing to change.
    expect(proc.stdoutLines.some((l) => l.includes('[server] address'))).toBe(false);
    const status = await createApiClient(`http://127.0.0.1:${secondPort}/api/v1`).get('/status');
    expect(status.status).toBe(401); // listening there, asking for credentials
    const after = await readFile(configPath, 'utf8');
    expect(after).toBe(
      before
        .replace('[api]\n', '[api]\n# kept: a comment of my own\n')
        .replace(`address = "127.0.0.1:${firstPort}"`, `address = "127.0.0.1:${secondPort}"`),
    );
    proc.child.kill('SIGTERM');
    await proc.exited;

    // Without the flags the stored addresses are used as they are.
    proc = startProcess(SVCD_BIN, ['quickstart', '--data-dir', dataDir]);
    const apiLine = await proc.waitForLine((l) => l.includes('API:'));
    expect(apiLine).toContain(`http://127.0.0.1:${secondPort}/api/v1`);
    expect(await readFile(configPath, 'utf8')).toBe(after);
    await proc.stop();
    proc = undefined;

    const bad = await runProcess(SVCD_BIN, ['quickstart', '--data-dir', dataDir, '--api-address', 'nowhere']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--api-address nowhere: expected host:port/);
    expect(await readFile(configPath, 'utf8')).toBe(after);
  }, 90_000); // four svcd starts one after the other

  test('--help explains every flag of svcd and svc', async () => {
    const svcd = await runProcess(SVCD_BIN, ['--help']);
    expect(svcd.code).toBe(0);
    for (const flag of ['--config', '--version', 'quickstart', 'user', 'example-config'])
      expect(svcd.stdout).toContain(flag);
    const user = await runProcess(SVCD_BIN, ['user', '--help']);
    for (const flag of ['--username', '--password', '--group', '--config'])
      expect(user.stdout).toContain(flag);
    const svc = await runProcess(SVC_BIN, ['--help']);
    expect(svc.code).toBe(0);
    expect(svc.stdout).toContain('Usage: svc');
  });
});

describe('graceful shutdown', () => {
  test('SIGTERM lets in-flight requests finish, then exits 0', async () => {
    const apiPort = await freePort();
    const configPath = await writeSetup(apiPort);
    // A costly hash keeps each login in flight for a while; debug logs show when every request has arrived.
    const users = [
      { username: 'slow', password: await hash('slow-secret-1', { cost: 12 }), groups: ['Administrators'] },
    ];
    await writeFile(join(dir, 'users.json'), JSON.stringify(users));
    await writeFile(
      configPath,
      (await readFile(configPath, 'utf8')).replace('log_level = "info"', 'log_level = "debug"'),
    );
    proc = await startSvcdProcess(configPath);
    const api = createApiClient(`http://127.0.0.1:${apiPort}/api/v1`);
    const count = 6;
    const logins = Array.from({ length: count }, () =>
      api.get('/login', { auth: { basic: ['slow', 'slow-secret-1'] } }),
    );
    await proc.waitForLine(
      () => proc!.stdoutLines.filter((l) => l.includes('"request received"')).length === count,
    );
    proc.child.kill('SIGTERM');
    const statuses = (await Promise.all(logins)).map((r) => r.status);
    expect(statuses).toEqual(Array(count).fill(200));
    expect((await proc.exited).code).toBe(0);
    const responded = proc.stdoutLines.filter((l) => l.includes('"msg":"request"')).length;
    const stopped = proc.stdoutLines.findIndex((l) => l.includes('"msg":"stopped"'));
    expect(responded).toBe(count);
    expect(stopped).toBeGreaterThan(proc.stdoutLines.findIndex((l) => l.includes('"msg":"shutting down"')));
  });
});
