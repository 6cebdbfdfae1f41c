import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { writeAdminUserFile } from '../test-support/e2e-setup.js';
import { createApiClient, type ApiClient } from '../test-support/api-client.js';
import {
  SVCD_BIN,
  freePort,
  parseLog,
  startExecutable,
  startProcess,
  type RunningProcess,
} from '../test-support/process.js';
import { openRaw, parseResponse, rawRequest, type RawConnection } from '../test-support/raw-http.js';

const ADMIN = { basic: ['admin', 'admin-secret-1'] as [string, string] };
const BASIC = Buffer.from('admin:admin-secret-1').toString('base64');
const TIMEOUT_MS = 2000;
/** Node checks the timeouts once a second; the rest is slack for a loaded machine. */
const CLOSE_WITHIN_MS = TIMEOUT_MS + 4000;
/** Connections opened at once; more would overflow the listen backlog (511) and only test the kernel. */
const BATCH = 200;

interface Svcd {
  proc: RunningProcess;
  api: ApiClient;
  apiPort: number;
  agentPort: number;
  dir: string;
}

async function startSvcd(api: Record<string, string | number>, server: Record<string, string | number> = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'svcd-slow-'));
  await writeAdminUserFile(dir);
  const apiPort = await freePort();
  const line = ([key, value]: [string, string | number]) => `${key} = ${JSON.stringify(value)}`;
  const config = [
    '[server]',
    'address = "127.0.0.1:0"',
    'data_dir = "data"',
    ...Object.entries(server).map(line),
    '[api]',
    `address = "127.0.0.1:${apiPort}"`,
    'auth_file = "users.json"',
    'user_login_wait = 0',
    ...Object.entries(api).map(line),
  ].join('\n');
  await writeFile(join(dir, 'svcd.conf'), config);
  const proc = startProcess(SVCD_BIN, ['-c', join(dir, 'svcd.conf')]);
  await proc.waitForLog('API listening');
  // A raw request that closes its connection: a pooled keep-alive one would count against max_connections.
  const status = await rawRequest(
    apiPort,
    `GET /api/v1/status HTTP/1.1\r\nHost: x\r\nAuthorization: Basic ${BASIC}\r\nConnection: close\r\n\r\n`,
  );
  const agentPort = Number(new URL(String(status.json.data.connect_url[0])).port);
  const client = createApiClient(`http://127.0.0.1:${apiPort}/api/v1`);
  return { proc, api: client, apiPort, agentPort, dir } satisfies Svcd;
}

async function stopSvcd(svcd: Svcd | undefined) {
  if (!svcd) return;
  await svcd.proc.stop();
  await rm(svcd.dir, { recursive: true, force: true });
}

/** Opens `count` connections, `BATCH` at a time, each writing what `payloadOf(i)` gives. */
async function openMany(
  port: number,
  count: number,
  payloadOf: (i: number) => string,
): Promise<RawConnection[]> {
  const opened: RawConnection[] = [];
  for (let from = 0; from < count; from += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, count - from) }, (_, k) =>
      openRaw(port, payloadOf(from + k), { closeWithinMs: CLOSE_WITHIN_MS + 10_000 }),
    );
    opened.push(...(await Promise.all(batch)));
  }
  return opened;
}

/** Every connection was answered 408 in our shape and closed by the server within the timeout plus margin. */
async function expectAllTimedOut(connections: RawConnection[]): Promise<void> {
  const results = await Promise.all(
    connections.map(async (c) => ({ opened: c.openedAt, ...(await c.closed) })),
  );
  const statuses = new Set(results.map((r) => parseResponse(r.received).status));
  expect([...statuses]).toEqual([408]);
  expect(parseResponse(results[0]?.received ?? '').json.errors[0].code).toBe('ERR_REQUEST_TIMEOUT');
  const lifetimes = results.map((r) => r.closedAt - r.opened);
  // Not before the timeout (the server's clock starts a little after the client connects)...
  expect(Math.min(...lifetimes)).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
  // ...and not long after it.
  expect(Math.max(...lifetimes)).toBeLessThan(CLOSE_WITHIN_MS);
}

/** svcd writes level names ("warn", "error"). */
const errorLines = (svcd: Svcd) =>
  svcd.proc.stdoutLines.map(parseLog).filter((l) => ['error', 'fatal'].includes(String(l?.level)));

describe('slow and half-open clients against a real svcd', () => {
  let svcd: Svcd | undefined;
  beforeAll(async () => {
    svcd = await startSvcd(
      {
        read_header_timeout: '2s',
        read_timeout: '2s',
        idle_timeout: '2s',
        max_connections: 5000,
        // All from 127.0.0.1: the per-address share would close most of them at once.
        max_connections_per_address: 0,
      },
      { upgrade_timeout: '2s' },
    );
  });
  afterAll(() => stopSvcd(svcd));

  test('2,000 half-open API requests are answered 408 and closed within the timeout; logins keep working', async () => {
    const s = svcd!;
    const partialHeaders = 'GET /api/v1/status HTTP/1.1\r\nHost: x\r\nAuthorization: Basic ';
    const partialBody =
      'POST /api/v1/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n' +
      `Authorization: Basic ${BASIC}\r\n\r\n{"user`;
    const connections = await openMany(s.apiPort, 2000, (i) => (i % 2 === 0 ? partialHeaders : partialBody));

    // While they are held open, logins still go through: answered while svcd still holds slow connections, not
    // queued behind them until they time out. (On a loaded machine the first batches may time out meanwhile.)
    const logins = await Promise.all([1, 2, 3].map(() => s.api.get('/login', { auth: ADMIN })));
    expect(logins.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(connections.some((c) => !c.socket.destroyed)).toBe(true);

    await expectAllTimedOut(connections);
    expect((await s.api.get('/login', { auth: ADMIN })).status).toBe(200);
    expect(errorLines(s)).toEqual([]);
    expect(s.proc.child.exitCode).toBeNull();
  });

  test('a keep-alive connection left idle is closed after idle_timeout', async () => {
    const s = svcd!;
    const connection = await openRaw(
      s.apiPort,
      `GET /api/v1/status HTTP/1.1\r\nHost: x\r\nAuthorization: Basic ${BASIC}\r\n\r\n`,
      { closeWithinMs: CLOSE_WITHIN_MS + 5000 },
    );
    const answeredAt = await new Promise<number>((resolve) =>
      connection.socket.once('data', () => resolve(Date.now())),
    );
    const { received, closedAt } = await connection.closed;
    expect(parseResponse(received).status).toBe(200);
    expect(closedAt - answeredAt).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
    expect(closedAt - answeredAt).toBeLessThan(CLOSE_WITHIN_MS);
  });

  test('500 partial agent upgrade requests are answered 408 and closed within upgrade_timeout, and logged', async () => {
    const s = svcd!;
    const partialUpgrade = 'GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n';
    const connections = await openMany(s.agentPort, 500, () => partialUpgrade);
    await expectAllTimedOut(connections);
    const refused = await s.proc.waitForLog('agent connection refused');
    expect(refused).toMatchObject({ ip: '127.0.0.1', status: 408, code: 'ERR_REQUEST_TIMEOUT' });
    // Once a minute per address: 500 refusals, one line.
    expect(s.proc.stdoutLines.filter((l) => l.includes('"agent connection refused"'))).toHaveLength(1);
    expect(errorLines(s)).toEqual([]);
  });
});

describe('[api] max_connections on a real svcd', () => {
  let svcd: Svcd | undefined;
  afterAll(() => stopSvcd(svcd));

  test('beyond the cap connections are closed unanswered; the API recovers once slow ones time out', async () => {
    svcd = await startSvcd({ read_header_timeout: '2s', read_timeout: '2s', max_connections: 20 });
    const s = svcd;
    const held = await openMany(s.apiPort, 20, () => '');
    const extra = await openRaw(s.apiPort, 'GET /api/v1/status HTTP/1.1\r\nHost: x\r\n\r\n', {
      closeWithinMs: TIMEOUT_MS - 500,
    });
    expect((await extra.closed).received).toBe('');
    const warning = await s.proc.waitForLog('API connection refused: [api] max_connections are open');
    expect(warning).toMatchObject({ level: 'warn', max_connections: 20 });
    // Another address is served: the address holding the most gives up its oldest connection.
    const other = await rawRequest(s.apiPort, STATUS_REQUEST, { localAddress: OPERATOR_ADDRESS });
    expect(other.status).toBe(200);
    expect((await held[0]!.closed).received).toBe('');
    held.shift();

    await expectAllTimedOut(held);
    expect((await s.api.get('/login', { auth: ADMIN })).status).toBe(200);
    expect(s.proc.child.exitCode).toBeNull();
  });
});

const STATUS_REQUEST = `GET /api/v1/status HTTP/1.1\r\nHost: x\r\nAuthorization: Basic ${BASIC}\r\nConnection: close\r\n\r\n`;
/** An operator's probe from another loopback address (Linux routes all of 127/8 to lo). */
const OPERATOR_ADDRESS = '127.0.0.2';
const SLOWLORIS = fileURLToPath(new URL('../test-support/slowloris.ts', import.meta.url));
const countResponses = (received: string) => received.split(/^HTTP\/1\.1 /m).length - 1;

describe('slow-request attacks on a real svcd (default limits)', () => {
  let svcd: Svcd | undefined;
  beforeAll(async () => {
    svcd = await startSvcd({});
  });
  afterAll(() => stopSvcd(svcd));

  test('1,000 reconnecting slowloris connections from one address: every operator probe from another is answered', async () => {
    const s = svcd!;
    // The attack runs for longer than read_header_timeout (5 s), so its connections are also cut and renewed.
    const attacker = startExecutable(process.execPath, [
      '--import',
      'tsx',
      SLOWLORIS,
      String(s.apiPort),
      '1000',
      '8000',
    ]);
    await attacker.waitForLine((line) => line === 'attacking');
    let attacking = true;
    void attacker.exited.then(() => (attacking = false));
    const latencies: number[] = [];
    const statuses: number[] = [];
    while (attacking) {
      const started = Date.now();
      const answer = await rawRequest(s.apiPort, STATUS_REQUEST, {
        localAddress: OPERATOR_ADDRESS,
        closeWithinMs: 5000,
      });
      statuses.push(answer.status);
      latencies.push(Date.now() - started);
    }
    const made = await attacker.waitForLine((line) => line.startsWith('made '));
    console.log(
      `slowloris: ${made} attacker connections; ${statuses.length} probes, slowest ${Math.max(...latencies)} ms`,
    );
    expect(statuses.length).toBeGreaterThan(3);
    expect(new Set(statuses)).toEqual(new Set([200]));
    // The attacker's own address is refused beyond its share, and that is logged.
    const refused = await s.proc.waitForLog(
      'API connection refused: this address holds [api] max_connections_per_address',
    );
    expect(refused).toMatchObject({ level: 'warn', ip: '127.0.0.1', max_connections_per_address: 128 });
    expect(errorLines(s)).toEqual([]);
  });

  test('a partial body without credentials gets one answer, 401, and the connection is closed at once', async () => {
    const s = svcd!;
    const partialBody =
      'POST /api/v1/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"user';
    // read_timeout is 30 s: a connection kept until then would fail this bound.
    const connection = await openRaw(s.apiPort, partialBody, { closeWithinMs: 5000 });
    const { received } = await connection.closed;
    expect(countResponses(received)).toBe(1);
    const answer = parseResponse(received);
    expect(answer.status).toBe(401);
    expect(answer.headers.connection).toBe('close');
  });

  test('one address holds at most max_connections_per_address; another address is still served', async () => {
    const s = svcd!;
    const held = await openMany(s.apiPort, 128, () => 'GET /api/v1/status HTTP/1.1\r\nHost: x\r\n');
    const extra = await openRaw(s.apiPort, STATUS_REQUEST, { closeWithinMs: 2000 });
    expect((await extra.closed).received).toBe('');
    const other = await rawRequest(s.apiPort, STATUS_REQUEST, { localAddress: OPERATOR_ADDRESS });
    expect(other.status).toBe(200);
    for (const c of held) c.socket.destroy();
  });

  test('requests from one address beyond half its connection share get 429, and their connection is closed', async () => {
    const s = svcd!;
    // Authenticated requests whose body never completes: each stays in progress until read_timeout.
    const slowBody =
      `POST /api/v1/users HTTP/1.1\r\nHost: x\r\nAuthorization: Basic ${BASIC}\r\n` +
      'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"user';
    const held = await openMany(s.apiPort, 64, () => slowBody);
    // The requests are in once svcd reads their bodies; a status probe from the same address then shows it.
    let answer = await rawRequest(s.apiPort, STATUS_REQUEST);
    for (let tries = 0; answer.status === 200 && tries < 50; tries++)
      answer = await rawRequest(s.apiPort, STATUS_REQUEST);
    expect(answer.status).toBe(429);
    expect(answer.json.errors[0].code).toBe('ERR_TOO_MANY_REQUESTS');
    expect(answer.headers.connection).toBe('close');
    expect((await rawRequest(s.apiPort, STATUS_REQUEST, { localAddress: OPERATOR_ADDRESS })).status).toBe(
      200,
    );
    for (const c of held) c.socket.destroy();
  });
});
