import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  startSvcdProcess,
  svcdFingerprint,
  writeAdminUserFile,
  writeSvcdConfig,
} from '../test-support/e2e-setup.js';
import { createApiClient, type ApiClient } from '../test-support/api-client.js';
import { SVC_BIN, freePort, parseLog, startProcess, type RunningProcess } from '../test-support/process.js';

const ADMIN = { basic: ['admin', 'admin-secret-1'] as [string, string] };
const CREDENTIALS = { 'agent-a': 'password-a-1', 'agent-b': 'password-b-1', 'agent-c': 'password-c-1' };

interface ClientRecord {
  id: string;
  name: string;
  tags: string[];
  labels: Record<string, string>;
  connection_state: string;
  disconnected_at: string | null;
  address: string;
  [field: string]: unknown;
}

let dir: string;
let configPath: string;
let clientUrl: string;
let api: ApiClient;
let fingerprint: string;
let svcd: RunningProcess | undefined;
const agents = new Map<string, RunningProcess>();
const extra: RunningProcess[] = [];

async function startSvcd(): Promise<void> {
  svcd = await startSvcdProcess(configPath);
}

async function clients(): Promise<ClientRecord[]> {
  const res = await api.get('/clients?sort=id', { auth: ADMIN });
  expect(res.status).toBe(200);
  return res.json.data as ClientRecord[];
}

/** Polls GET /clients (bounded) until the predicate holds; returns the last list. */
async function waitForClients(check: (list: ClientRecord[]) => boolean, withinMs = 30_000) {
  const deadline = Date.now() + withinMs;
  let list = await clients();
  while (!check(list) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
    list = await clients();
  }
  return list;
}

const allConnected = (list: ClientRecord[]) =>
  list.length === 3 && list.every((c) => c.connection_state === 'connected');

/**
 * The agents' longest wait between reconnects (`[connection] max_retry_interval`, default 5m): short, so that
 * after svcd's restarts every agent is back within seconds rather than after a 16 s step of its backoff.
 */
const MAX_RETRY = { setting: 'max_retry_interval = "4s"', ms: 4000 };

function agent(args: string[], env: Record<string, string | undefined> = {}): RunningProcess {
  return startProcess(SVC_BIN, ['--log-level', 'debug', ...args], { env: { SVC_AUTH: undefined, ...env } });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-'));
  const [apiPort, clientPort] = [await freePort(), await freePort()];
  clientUrl = `http://127.0.0.1:${clientPort}`;
  await writeAdminUserFile(dir);
  await writeFile(join(dir, 'clients-auth.json'), JSON.stringify(CREDENTIALS));
  configPath = await writeSvcdConfig(dir, {
    clientPort,
    apiPort,
    keySeed: 'e2e-agents-seed',
    server: ['auth_file = "clients-auth.json"', 'keepalive_interval = "2s"'],
  });
  await startSvcd();
  api = createApiClient(`http://127.0.0.1:${apiPort}/api/v1`);
  fingerprint = await svcdFingerprint(api);
  // Agents A and B take everything else from flags and the environment.
  const retryConfig = join(dir, 'retry.conf');
  await writeFile(retryConfig, `[connection]\n${MAX_RETRY.setting}\n`);

  // Agent A: credentials by --auth, a fingerprint prefix, tags and labels by flags.
  agents.set(
    'a',
    agent([
      ...['--auth', 'agent-a:password-a-1', '--id', 'a-1', '--name', 'alpha'],
      ...['--tag', 'web', '--tag', 'eu', '--label', 'env:prod', '--label', 'team:blue'],
      ...['--fingerprint', fingerprint.slice(0, 11).toUpperCase(), '--data-dir', join(dir, 'a')],
      ...['-c', retryConfig, clientUrl],
    ]),
  );
  // Agent B: credentials from SVC_AUTH only.
  agents.set(
    'b',
    agent(
      [
        '--id',
        'b-1',
        '--name',
        'beta',
        '--tag',
        'db',
        '--fingerprint',
        fingerprint,
        '--data-dir',
        join(dir, 'b'),
        '-c',
        retryConfig,
        clientUrl,
      ],
      {
        SVC_AUTH: 'agent-b:password-b-1',
      },
    ),
  );
  // Agent C: everything from a config file, whose auth wins over a wrong SVC_AUTH.
  await writeFile(
    join(dir, 'c.conf'),
    [
      '[client]',
      `server = "${clientUrl}"`,
      'auth = "agent-c:password-c-1"',
      'id = "c-1"',
      'name = "gamma"',
      'tags = ["web", "us"]',
      `fingerprint = "${fingerprint}"`,
      'data_dir = "c-data"',
      '[client.labels]',
      'env = "dev"',
      '[connection]',
      MAX_RETRY.setting,
    ].join('\n'),
  );
  agents.set('c', agent(['-c', join(dir, 'c.conf')], { SVC_AUTH: 'agent-c:wrong-password' }));
});

afterAll(async () => {
  for (const proc of [...agents.values(), ...extra]) await proc.stop();
  await svcd?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('svcd with three real svc agents', () => {
  test('GET /clients shows all three with real values and masked addresses', async () => {
    const list = await waitForClients(allConnected);
    expect(list.map((c) => [c.id, c.name, c.tags, c.labels])).toEqual([
      ['a-1', 'alpha', ['web', 'eu'], { env: 'prod', team: 'blue' }],
      ['b-1', 'beta', ['db'], {}],
      ['c-1', 'gamma', ['web', 'us'], { env: 'dev' }],
    ]);
    for (const c of list) {
      expect(c.address).toMatch(/^127\.0\.0\.x:\d+$/);
      expect(c.disconnected_at).toBeNull();
      expect(c.tunnels).toEqual([]);
      expect(c.num_cpus).toBeGreaterThan(0);
      expect(c.mem_total).toBeGreaterThan(0);
      for (const field of [
        'os',
        'os_arch',
        'os_kernel',
        'hostname',
        'timezone',
        'version',
        'cpu_model_name',
      ]) {
        expect(typeof c[field], field).toBe('string');
        expect((c[field] as string).length, field).toBeGreaterThan(0);
      }
      expect(Array.isArray(c.ipv4)).toBe(true);
    }
    expect(list.map((c) => c.client_auth_id)).toEqual(['agent-a', 'agent-b', 'agent-c']);
    const filtered = await api.get('/clients?filter[tags]=web&filter[labels]=env:%20p*', { auth: ADMIN });
    expect(filtered.json.data.map((c: ClientRecord) => c.id)).toEqual(['a-1']);
    // The reference agent's kernel family, so a filter or group rule os_kernel=linux finds Linux clients.
    const linux = await api.get('/clients?filter[os_kernel]=linux&sort=id', { auth: ADMIN });
    expect(linux.json.data.map((c: ClientRecord) => c.id)).toEqual(['a-1', 'b-1', 'c-1']);
    const windows = await api.get('/clients?filter[os_kernel]=windows', { auth: ADMIN });
    expect(windows.json.data).toEqual([]);
    const status = await api.get('/status', { auth: ADMIN });
    expect(status.json.data).toMatchObject({ clients_connected: 3, clients_disconnected: 0 });
  });

  test('--auth wins over SVC_AUTH; wrong password, unknown id and wrong fingerprint are refused and logged', async () => {
    const wrongFlag = agent(
      ['--auth', 'agent-a:not-the-password', '--id', 'd-1', '--data-dir', join(dir, 'd'), clientUrl],
      {
        SVC_AUTH: 'agent-a:password-a-1',
      },
    );
    const unknown = agent([
      '--auth',
      'nobody:whatever-123',
      '--id',
      'e-1',
      '--data-dir',
      join(dir, 'e'),
      clientUrl,
    ]);
    const badPin = agent([
      '--auth',
      'agent-b:password-b-1',
      '--id',
      'f-1',
      '--fingerprint',
      '00:11:22',
      '--data-dir',
      join(dir, 'f'),
      clientUrl,
    ]);
    extra.push(wrongFlag, unknown, badPin);
    const refusal = (authId: string) => (line: string) => {
      const log = parseLog(line);
      return log?.msg === 'agent login refused' && log.client_auth_id === authId;
    };
    const message = (pattern: RegExp) => (line: string) => pattern.test(String(parseLog(line)?.msg));
    await svcd!.waitForLine(refusal('agent-a'));
    await svcd!.waitForLine(refusal('nobody'));
    await wrongFlag.waitForLine(message(/refused the credentials of client-auth-id "agent-a"/));
    await unknown.waitForLine(message(/refused the credentials of client-auth-id "nobody"/));
    await badPin.waitForLine(
      message(/fingerprint is ([0-9a-f]{2}:){15}[0-9a-f]{2} but the configured fingerprint is 00:11:22/),
    );
    for (const proc of [wrongFlag, unknown, badPin]) await proc.stop();
    expect((await clients()).map((c) => c.id)).toEqual(['a-1', 'b-1', 'c-1']);
  });

  test('the same agent line twice on one host: the second says it needs its own --data-dir or --id, and retries', async () => {
    const refusedTwice = (line: string) => /already connected/.test(String(parseLog(line)?.msg));
    const twin = agent([
      ...['--auth', 'agent-a:password-a-1', '--id', 'a-1', '--name', 'alpha'],
      ...['--fingerprint', fingerprint, '--data-dir', join(dir, 'a'), clientUrl],
    ]);
    extra.push(twin);
    const first = parseLog(await twin.waitForLine(refusedTwice));
    expect(first).toMatchObject({ level: 'error' });
    expect(String(first?.msg)).toContain(
      `A second svc on one host needs its own --data-dir (this one uses ${join(dir, 'a')}`,
    );
    expect(String(first?.msg)).toContain('or its own --id');
    // It keeps trying (backoff): a second refusal follows, and the process has not exited.
    await twin.waitForLine(
      (line) => refusedTwice(line) && line !== twin.stdoutLines.find(refusedTwice),
      20_000,
    );
    expect(twin.child.exitCode).toBeNull();
    await twin.stop();
    const a = (await clients()).find((c) => c.id === 'a-1');
    expect(a?.connection_state).toBe('connected');
  }, 40_000);

  test('after kill -9 and a restart of svcd every agent comes back by itself, records intact', async () => {
    svcd!.child.kill('SIGKILL');
    await svcd!.exited;
    await startSvcd();
    const back = await waitForClients(allConnected);
    expect(back.map((c) => [c.id, c.name, c.tags])).toEqual([
      ['a-1', 'alpha', ['web', 'eu']],
      ['b-1', 'beta', ['db']],
      ['c-1', 'gamma', ['web', 'us']],
    ]);
  }, 90_000);

  test('while svcd is away an agent retries with a growing backoff, then reconnects', async () => {
    const a = agents.get('a')!;
    const seen = a.stdoutLines.length;
    svcd!.child.kill('SIGTERM');
    await svcd!.exited;
    const retries = () =>
      a.stdoutLines
        .slice(seen)
        .map(parseLog)
        .filter((l) => typeof l?.retry_cap_ms === 'number' && /cannot connect/.test(String(l.msg)));
    await a.waitForLine(() => retries().length >= 3, 20_000);
    const caps = retries().map((l) => Number(l!.retry_cap_ms));
    const delays = retries().map((l) => Number(l!.retry_in_ms));
    // Growing (1 s, doubling) up to max_retry_interval, never beyond it.
    expect(caps[0]).toBeLessThan(MAX_RETRY.ms);
    for (let i = 1; i < caps.length; i++) expect(caps[i]).toBeGreaterThanOrEqual(caps[i - 1]!);
    expect(caps[2]).toBe(MAX_RETRY.ms);
    caps.forEach((cap) => expect(cap).toBeLessThanOrEqual(MAX_RETRY.ms));
    delays.forEach((delay, i) => expect(delay).toBeLessThanOrEqual(caps[i]!));
    await startSvcd();
    // Each agent tries again within max_retry_interval.
    const back = await waitForClients(allConnected, 60_000);
    expect(back.map((c) => c.connection_state)).toEqual(['connected', 'connected', 'connected']);
  }, 120_000);
});
