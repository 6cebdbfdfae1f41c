import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ConfigError, parseTomlConfig } from '@svc/platform';
import { settingsFrom } from '../src/cli/run.js';
import { agentConfigSchema } from '../src/config/schema.js';
import { defaultExecSettings } from '../src/exec/exec-settings.js';
import { resolveSettings, UsageError, type CliFlags, type SettingsInput } from '../src/config/settings.js';

const parseConfig = (text: string) => parseTomlConfig(text, agentConfigSchema, { source: 'svc.conf' });

function settings(overrides: Partial<SettingsInput> & { flags?: CliFlags; toml?: string } = {}) {
  const { toml, ...rest } = overrides;
  return resolveSettings({
    flags: {},
    cwd: '/work',
    hostname: 'this-host',
    serverArg: 'svcd:8080',
    ...(toml === undefined ? {} : { file: { config: parseConfig(toml), path: 'conf/svc.conf' } }),
    ...rest,
  });
}

function problemsOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof UsageError || error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('expected an error');
}

describe('defaults', () => {
  test('only a server and credentials are needed', () => {
    expect(settings({ flags: { auth: 'c1:pw' } })).toEqual({
      serverUrl: 'ws://svcd:8080/',
      credentials: { id: 'c1', password: 'pw' },
      credentialsSource: '--auth',
      clientId: undefined,
      name: 'this-host',
      tags: [],
      labels: {},
      fingerprint: undefined,
      tlsCaFile: undefined,
      dataDir: '/work/svc-data',
      tunnelAllowed: [],
      keepaliveIntervalMs: 20_000,
      maxRetryIntervalMs: 300_000,
      logLevel: 'info',
      logFile: '',
      exec: defaultExecSettings(),
    });
  });
});

describe('credentials precedence: --auth, then [client] auth, then SVC_AUTH', () => {
  const toml = '[client]\nauth = "file-id:file-pw"';
  test('--auth wins over the file and the environment', () => {
    const s = settings({ flags: { auth: 'flag-id:flag-pw' }, toml, envAuth: 'env-id:env-pw' });
    expect(s.credentials).toEqual({ id: 'flag-id', password: 'flag-pw' });
    expect(s.credentialsSource).toBe('--auth');
  });
  test('the file wins over the environment', () => {
    const s = settings({ toml, envAuth: 'env-id:env-pw' });
    expect(s.credentials).toEqual({ id: 'file-id', password: 'file-pw' });
    expect(s.credentialsSource).toBe('[client] auth');
  });
  test('the environment is used last', () => {
    const s = settings({ toml: '', envAuth: 'env-id:env:pw' });
    expect(s.credentials).toEqual({ id: 'env-id', password: 'env:pw' });
    expect(s.credentialsSource).toBe('SVC_AUTH');
  });
  test('a valid higher source hides a malformed lower one', () => {
    expect(settings({ flags: { auth: 'a:b' }, envAuth: 'broken' }).credentials.id).toBe('a');
  });
  test('missing everywhere is an error naming all three sources', () => {
    const message = problemsOf(() => settings({ envAuth: '' }));
    expect(message).toMatch(/no credentials: pass --auth .* \[client\] .* SVC_AUTH/);
  });
  test.each([
    [{ flags: { auth: 'nocolon' } }, /^--auth: must be <client-auth-id>:<password> \(no colon found\)/],
    [{ flags: { auth: ':pw' } }, /^--auth: .*id before the colon is empty/],
    [{ flags: { auth: 'id:' } }, /^--auth: .*password after the colon is empty/],
    [{ envAuth: 'nocolon' }, /^SVC_AUTH: must be/],
    [{ toml: '[client]\nauth = "id:"' }, /\[client\] auth: .*password after the colon is empty/],
  ])('malformed credentials %#', (input, message) => {
    expect(problemsOf(() => settings(input))).toMatch(message);
  });
});

describe('flags override the file', () => {
  const toml = `
[client]
server = "http://file-server:1"
auth = "a:b"
id = "file-id"
name = "File name"
tags = ["t1", "t2"]
labels = { env = "test", team = "ops" }
fingerprint = "AA:BB"
data_dir = "state"
tunnel_allowed = ["127.0.0.1", ":22"]
[connection]
keepalive_interval = "30s"
max_retry_interval = 60
[logging]
log_level = "warn"
log_file = "logs/svc.log"
`;
  test('file values are used without flags, with paths relative to the file', () => {
    expect(settings({ serverArg: undefined, toml })).toEqual({
      serverUrl: 'ws://file-server:1/',
      credentials: { id: 'a', password: 'b' },
      credentialsSource: '[client] auth',
      clientId: 'file-id',
      name: 'File name',
      tags: ['t1', 't2'],
      labels: { env: 'test', team: 'ops' },
      fingerprint: 'aa:bb',
      tlsCaFile: undefined,
      dataDir: '/work/conf/state',
      tunnelAllowed: ['127.0.0.1', ':22'],
      keepaliveIntervalMs: 30_000,
      maxRetryIntervalMs: 60_000,
      logLevel: 'warn',
      logFile: '/work/conf/logs/svc.log',
      exec: defaultExecSettings(),
    });
  });
  test('each flag replaces its file value', () => {
    const s = settings({
      serverArg: 'https://flag-server',
      toml,
      flags: {
        id: 'flag-id',
        name: 'Flag name',
        tag: ['x'],
        label: ['k:v'],
        fingerprint: 'CC',
        dataDir: 'mine',
        logLevel: 'debug',
      },
    });
    expect(s).toMatchObject({
      serverUrl: 'wss://flag-server/',
      clientId: 'flag-id',
      name: 'Flag name',
      tags: ['x'],
      labels: { k: 'v' },
      fingerprint: 'cc',
      dataDir: '/work/mine',
      logLevel: 'debug',
    });
  });
});

describe('--tls-ca and [client] tls_ca', () => {
  const toml = '[client]\nserver = "https://svcd.example.com:8080"\nauth = "a:b"\ntls_ca = "tls/ca.pem"\n';
  test('the file value is taken from the file folder; the flag from the working directory and wins', () => {
    expect(settings({ serverArg: undefined, toml }).tlsCaFile).toEqual({
      path: '/work/conf/tls/ca.pem',
      setting: '[client] tls_ca',
    });
    expect(settings({ serverArg: undefined, toml, flags: { tlsCa: 'ca.pem' } }).tlsCaFile).toEqual({
      path: '/work/ca.pem',
      setting: '--tls-ca',
    });
  });
  test('a CA with a plain ws:// server is refused: it would never be used', () => {
    expect(problemsOf(() => settings({ flags: { auth: 'a:b', tlsCa: 'ca.pem' } }))).toBe(
      '--tls-ca: a CA is only used for TLS; give the server address as https://host:port (it is ws://svcd:8080/)',
    );
  });
});

describe('bad input is refused with a message naming it', () => {
  test.each<[Partial<SettingsInput>, RegExp]>([
    [{ serverArg: 'localhost' }, /^server address: "localhost" needs a port or a scheme/],
    [{ serverArg: 'ftp://h:1' }, /^server address: .*unsupported scheme/],
    [{ flags: { label: ['novalue'] } }, /^--label: label "novalue" must be key:value/],
    [{ flags: { label: [':v'] } }, /^--label: .*key is empty/],
    [{ flags: { fingerprint: 'xyz' } }, /^--fingerprint: fingerprint "xyz" must be MD5 colon hex/],
    [{ flags: { id: '' } }, /^--id: must not be empty/],
    [{ flags: { id: 'x'.repeat(101) } }, /^--id: must be at most 100/],
    [{ flags: { tag: [''] } }, /^--tag: must not be empty/],
    [{ serverArg: undefined }, /^no server: pass the svcd address/],
  ])('%j', (input, message) => {
    expect(problemsOf(() => settings({ ...input, flags: { auth: 'a:b', ...input.flags } }))).toMatch(message);
  });

  test('several problems are listed together', () => {
    const message = problemsOf(() =>
      settings({ serverArg: 'nope', flags: { auth: 'bad', fingerprint: 'bad' } }),
    );
    expect(message).toMatch(/^3 problems:\n {2}server address: .*\n {2}--auth: .*\n {2}--fingerprint: /);
  });
});

describe('config file', () => {
  test.each([
    ['[client]\nsevrer = "h:1"', /\[client\] sevrer: unknown key/],
    ['[clinet]\nserver = "h:1"', /\[clinet\]: unknown section/],
    ['server = "h:1"', /server: unknown key outside any section/],
    ['[client]\ntags = "web"', /\[client\] tags: expected a list/],
    ['[client]\ntags = [1]', /\[client\] tags\[0\]: expected a string/],
    ['[client]\nlabels = ["a"]', /\[client\] labels: expected a table/],
    ['[client]\nlabels = { a = 1 }', /\[client\] labels\.a: expected a string/],
    ['[client]\nserver = "localhost"', /\[client\] server: "localhost" needs a port/],
    ['[client]\nauth = "nocolon"', /\[client\] auth: must be <client-auth-id>:<password>/],
    ['[client]\nauth = 5', /\[client\] auth: expected a string, got number\b/],
    ['[client]\nfingerprint = "zz"', /\[client\] fingerprint: fingerprint "zz" must be MD5 colon hex/],
    [
      '[client]\ntunnel_allowed = ["example.com"]',
      /\[client\] tunnel_allowed\[0\]: tunnel_allowed entry "example.com"/,
    ],
    ['[client]\nid = ""', /\[client\] id: must not be empty/],
    ['[connection]\nkeepalive_interval = "fast"', /\[connection\] keepalive_interval: invalid duration/],
    ['[connection]\nkeepalive_interval = "100ms"', /\[connection\] keepalive_interval: must be at least 1s/],
    ['[connection]\nmax_retry_interval = true', /\[connection\] max_retry_interval: expected a duration/],
    ['[connection]\nkeep_alive = "3m"', /\[connection\] keep_alive: unknown key/],
    ['[logging]\nlog_level = "verbose"', /\[logging\] log_level: must be one of error, warn, info, debug/],
    ['[client\n', /invalid TOML/],
  ])('%j', (toml, message) => {
    expect(problemsOf(() => parseConfig(toml))).toMatch(message);
  });

  test('the auth value is never echoed in a config error', () => {
    expect(problemsOf(() => parseConfig('[client]\nauth = "id-only-secret"'))).not.toContain(
      'id-only-secret',
    );
  });
});

describe('settingsFrom reads the file named by -c', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-conf-'));
    await writeFile(join(dir, 'svc.conf'), '[client]\nserver = "svcd:9000"\nauth = "c:p"\ndata_dir = "d"\n');
    await writeFile(join(dir, 'bad.conf'), '[client]\nname = 3\n');
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  test('loads it and resolves its relative paths from its folder', () => {
    const s = settingsFrom({ serverArg: undefined, flags: { config: join(dir, 'svc.conf') } }, { cwd: '/' });
    expect(s.serverUrl).toBe('ws://svcd:9000/');
    expect(s.dataDir).toBe(join(dir, 'd'));
  });

  test('names the file and the key on errors', () => {
    const message = problemsOf(() =>
      settingsFrom({ serverArg: undefined, flags: { config: join(dir, 'bad.conf') } }, { cwd: '/' }),
    );
    expect(message).toContain(join(dir, 'bad.conf'));
    expect(message).toMatch(/\[client\] name: expected a string/);
  });

  test('a missing file is a clear error', () => {
    const message = problemsOf(() =>
      settingsFrom({ serverArg: undefined, flags: { config: join(dir, 'nope.conf') } }, { cwd: '/' }),
    );
    expect(message).toMatch(/cannot read config file .*nope\.conf: the file does not exist/);
  });
});

test('svc.example.conf documents every key of the schema', async () => {
  const { readFile } = await import('node:fs/promises');
  const text = await readFile(new URL('../svc.example.conf', import.meta.url), 'utf8');
  const missing: string[] = [];
  for (const [section, schema] of Object.entries(agentConfigSchema.shape)) {
    if (!text.includes(`\n[${section}]\n`)) missing.push(`[${section}]`);
    const inner = schema.def.innerType;
    if (!('shape' in inner)) continue; // [interpreter-aliases]: free keys
    for (const key of Object.keys(inner.shape))
      // A doc line ("## ...") right above the key, or above a short group of keys it documents together.
      if (!new RegExp(`^## .*\\n(?:#.*\\n){0,3}#${key} = `, 'm').test(text))
        missing.push(`[${section}] ${key}`);
  }
  expect(missing).toEqual([]);
});

test('svc.example.conf parses with every key uncommented', async () => {
  const { readFile } = await import('node:fs/promises');
  const text = await readFile(new URL('../svc.example.conf', import.meta.url), 'utf8');
  const uncommented = text.replace(/^#(?=[a-z_]+ = )/gm, '');
  expect(uncommented).not.toBe(text);
  const config = parseConfig(uncommented);
  expect(config.client.server).toBe('ws://svcd.example.com:8080/');
  expect(config.client.labels).toEqual({ env: 'prod', team: 'ops' });
  expect(config.connection).toEqual({ keepalive_interval: 20_000, max_retry_interval: 300_000 });
  // The example shows the defaults of the exec sections.
  const defaults = defaultExecSettings();
  expect(config['remote-commands']).toEqual({
    enabled: true,
    allow: defaults.filters.allow,
    deny: defaults.filters.deny,
    order: ['allow', 'deny'],
    send_back_limit: defaults.sendBackLimit,
  });
  expect(config['remote-scripts']).toEqual({ enabled: true });
  expect(config['interpreter-aliases']).toEqual({
    bash: '/usr/bin/bash',
    pwsh: 'C:\\Program Files\\PowerShell\\7\\pwsh.exe',
  });
});
