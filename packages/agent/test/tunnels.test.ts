/**
 * Tunnels end to end: a real svcd (in process, real sockets), real agents, TCP targets on 127.0.0.1 and TCP
 * clients connecting to the tunnel ports svcd opens.
 */
import { createServer, type AddressInfo, type Server } from 'node:net';
import { once } from 'node:events';
import { request } from 'node:http';
import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { tunnelSchema, type TunnelData } from '@svc/protocol';
import { OPERATOR, startTestServer, type TestServer } from '../../../test-support/server.js';
import { Agent, type AgentOptions } from '../src/connection/agent.js';
import { defaultExecSettings } from '../src/exec/exec-settings.js';
import { NO_JOBS_DATA_DIR } from './support/exec.js';
import { captureLogs } from './support/log-capture.js';
import { basicHeader } from '../../../test-support/api-client.js';
import { freePortBlock } from '../../../test-support/process.js';
import { dial, outcome, readAll, startTarget, writeRandom, type Target } from './support/tcp.js';

const CREDENTIALS = { id: 'tunnel-agents', password: 'pass-1234' };
const AUTH = { basic: [OPERATOR.username, OPERATOR.password] as [string, string] };
/** Tunnel idle minutes last this long here. */
const MINUTE_MS = 300;
const MB = 1024 * 1024;

let svcd: TestServer;
let stopped = false;
/** used_ports = base..base+5, excluded base+2: the pool is base, base+1, base+3, base+4, base+5. */
let base: number;
let pool: number[];
const agents: Agent[] = [];
let sink: Target;
let source: Target;
let echo: Target;
/** Bytes the source target has handed to its latest connection, and the digest of everything it sent. */
const sent = { written: 0 };
let sourceDigest: Promise<{ bytes: number; sha256: string }> | undefined;
let sourceBytes = 50 * MB;

beforeAll(async () => {
  base = await freePortBlock(6);
  pool = [base, base + 1, base + 3, base + 4, base + 5];
  svcd = await startTestServer({
    store: 'file',
    server: {
      auth: `${CREDENTIALS.id}:${CREDENTIALS.password}`,
      client_login_wait: 0,
      used_ports: [`${base}-${base + 5}`],
      excluded_ports: [String(base + 2)],
      check_port_timeout: '1s',
    },
    tuning: { tunnels: { minuteMs: MINUTE_MS } },
  });
  // Replies after the request ended: the size and sha256 of what it received.
  sink = await startTarget((socket) => {
    void readAll(socket).then(({ bytes, sha256 }) => socket.end(`${bytes} ${sha256}`));
  });
  source = await startTarget((socket) => {
    sent.written = 0;
    sourceDigest = writeRandom(socket, sourceBytes, sent);
    sourceDigest.catch(() => undefined);
  });
  echo = await startTarget((socket) => socket.pipe(socket));
});

afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.stop()));
  if (!stopped) await svcd.stop();
  await Promise.all([sink.close(), source.close(), echo.close()]);
});

async function startAgent(clientId: string, overrides: Partial<AgentOptions> = {}): Promise<Agent> {
  const options: AgentOptions = {
    serverUrl: `ws://127.0.0.1:${svcd.server.clientPort}/`,
    credentials: CREDENTIALS,
    clientId,
    name: clientId,
    tags: [],
    labels: {},
    fingerprint: svcd.server.fingerprint,
    tunnelAllowed: [],
    keepaliveIntervalMs: 20_000,
    maxRetryIntervalMs: 60_000,
    dataDir: NO_JOBS_DATA_DIR,
    exec: defaultExecSettings(),
    ...overrides,
  };
  const agent = new Agent(options, { logger: captureLogs().logger });
  agents.push(agent);
  void agent.run();
  await vi.waitFor(() => expect(svcd.server.connections.get(clientId)).toBeDefined(), { timeout: 10_000 });
  return agent;
}

async function stopAgent(agent: Agent): Promise<void> {
  await agent.stop();
  agents.splice(agents.indexOf(agent), 1);
}

const put = (clientId: string, query: Record<string, string>) =>
  svcd.api.request('PUT', `/clients/${clientId}/tunnels?${new URLSearchParams(query).toString()}`, {
    auth: AUTH,
  });

const del = (clientId: string, tunnelId: string, query = '') =>
  svcd.api.request('DELETE', `/clients/${clientId}/tunnels/${tunnelId}${query}`, { auth: AUTH });

/** Opens a tunnel that must succeed; returns its JSON. */
async function openTunnel(clientId: string, query: Record<string, string>) {
  const res = await put(clientId, { 'skip-idle-timeout': 'true', ...query });
  expect(res.status, res.text).toBe(200);
  return res.json.data as { id: string; lport: string; lhost: string; scheme: string | null };
}

const tunnelsOf = async (clientId: string): Promise<TunnelData[]> =>
  (await svcd.api.get(`/clients/${clientId}`, { auth: AUTH })).json.data.tunnels as TunnelData[];

describe('tunnels through a real agent', () => {
  beforeAll(async () => {
    await startAgent('t-main');
  });

  test('opening a tunnel: the response, the client record and a pool port', async () => {
    const before = Date.now();
    const res = await put('t-main', {
      remote: `127.0.0.1:${echo.port}`,
      acl: '127.0.0.1,10.0.0.0/8',
      'auto-close': '1h',
    });
    expect(res.status, res.text).toBe(200);
    const tunnel = res.json.data;
    expect(tunnel).toEqual({
      id: '1',
      lhost: '0.0.0.0',
      lport: expect.any(String),
      rhost: '127.0.0.1',
      rport: String(echo.port),
      scheme: null,
      acl: '127.0.0.1,10.0.0.0/8',
      idle_timeout_minutes: 5,
      auto_close: 3600,
      tunnel_url: null,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/),
    });
    expect(tunnelSchema.parse(tunnel)).toEqual(tunnel);
    expect(Date.parse(tunnel.created_at)).toBeGreaterThanOrEqual(before - 1000);
    expect(pool).toContain(Number(tunnel.lport));
    expect(await tunnelsOf('t-main')).toEqual([tunnel]);
    const list = await svcd.api.get('/clients?filter[id]=t-main', { auth: AUTH });
    expect(list.json.data[0].tunnels).toEqual([tunnel]);

    const socket = await dial(Number(tunnel.lport));
    socket.end('ping');
    expect((await readAll(socket)).text).toBe('ping');

    expect((await del('t-main', tunnel.id)).status).toBe(204);
    expect(await tunnelsOf('t-main')).toEqual([]);
    expect(await outcome(Number(tunnel.lport))).toBe('refused');
  });

  test('scheme: given, empty or derived from the remote port; tunnel_url on the host the API was reached by', async () => {
    const given = await openTunnel('t-main', { remote: String(echo.port), scheme: 'http' });
    const empty = await openTunnel('t-main', { remote: String(sink.port), scheme: '' });
    const rejected = await put('t-main', { remote: '22', scheme: 'x'.repeat(16), check_port: 'false' });
    try {
      expect(given).toMatchObject({ scheme: 'http', tunnel_url: `http://127.0.0.1:${given.lport}` });
      expect(empty).toMatchObject({ scheme: null, tunnel_url: null });
      expect(rejected.status).toBe(400);
      expect(rejected.json.errors).toEqual([
        {
          code: 'ERR_URI_SCHEME_TOO_LONG',
          title: 'Invalid URI scheme: scheme exceeds the max length of 15 characters',
          detail: expect.stringContaining('got 16 characters'),
        },
      ]);
      const listed = await tunnelsOf('t-main');
      expect(listed.map((t) => tunnelSchema.parse(t))).toEqual([given, empty]);
    } finally {
      await del('t-main', given.id);
      await del('t-main', empty.id);
    }
    // No scheme parameter: the well-known port 22 gives ssh (the target need not listen with check_port=false).
    const derived = await openTunnel('t-main', { remote: '22', check_port: 'false' });
    await del('t-main', derived.id);
    expect(derived).toMatchObject({ scheme: 'ssh', tunnel_url: `ssh://127.0.0.1:${derived.lport}` });
  });

  test('tunnel_url takes the Host header the API was reached by (IPv6 in brackets); an odd one gives the machine name', async () => {
    const putWithHost = (host: string, remote: string) =>
      new Promise<{ status: number; json: { data: TunnelData } }>((resolve, reject) => {
        const url = new URL(`${svcd.server.apiUrl}/clients/t-main/tunnels?remote=${remote}&scheme=ssh`);
        const req = request(
          url,
          { method: 'PUT', headers: { host, authorization: basicHeader(...AUTH.basic) } },
          (res) => {
            let body = '';
            res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(body) }));
          },
        );
        req.on('error', reject).end();
      });
    const v6 = await putWithHost('[2001:db8::7]:8443', String(echo.port));
    const odd = await putWithHost('bad_host!', String(sink.port));
    try {
      expect(v6.status).toBe(200);
      expect(v6.json.data.tunnel_url).toBe(`ssh://[2001:db8::7]:${v6.json.data.lport}`);
      expect(odd.status).toBe(200);
      expect(odd.json.data.tunnel_url).toBe(`ssh://${hostname()}:${odd.json.data.lport}`);
    } finally {
      await del('t-main', v6.json.data.id);
      await del('t-main', odd.json.data.id);
    }
  });

  test('50 MB client → target arrive byte-identical; the reply comes after the request was half-closed', async () => {
    const tunnel = await openTunnel('t-main', { remote: String(sink.port) });
    try {
      const socket = await dial(Number(tunnel.lport));
      const reply = readAll(socket);
      const request = await writeRandom(socket, 50 * MB);
      expect((await reply).text).toBe(`${request.bytes} ${request.sha256}`);
    } finally {
      await del('t-main', tunnel.id, '?force=true');
    }
  });

  test('50 MB target → client arrive byte-identical though the client half-closed at once', async () => {
    sourceBytes = 50 * MB;
    const tunnel = await openTunnel('t-main', { remote: String(source.port) });
    try {
      const socket = await dial(Number(tunnel.lport));
      // Both ends of the agent's target socket finish while the SSH channel still holds data: it must not be lost.
      socket.end();
      const received = await readAll(socket);
      expect(sourceDigest).toBeDefined();
      expect(received).toMatchObject(await sourceDigest!);
    } finally {
      await del('t-main', tunnel.id, '?force=true');
    }
  });

  test('data queued behind a full SSH window survives the target closing (paused reader)', async () => {
    // 8 MB fit in the buffers along the way (about 12 MB here), so the target finishes and the agent's socket to it
    // closes while the agent's channel still holds data the paused reader has not made room for.
    sourceBytes = 8 * MB;
    const tunnel = await openTunnel('t-main', { remote: String(source.port) });
    try {
      const socket = await dial(Number(tunnel.lport));
      socket.end();
      socket.pause();
      await vi.waitFor(() => expect(sent.written).toBe(8 * MB));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const received = await readAll(socket);
      expect(received).toMatchObject(await sourceDigest!);
    } finally {
      sourceBytes = 50 * MB;
      await del('t-main', tunnel.id, '?force=true');
    }
  });

  test('a connection reset at either end is let go at the other', async () => {
    const greeted: Promise<void>[] = [];
    const ended: Promise<void>[] = [];
    const slam = await startTarget((socket) => {
      ended.push(new Promise((resolve) => socket.once('end', () => resolve())));
      greeted.push(
        new Promise((resolve) =>
          socket.once('data', (chunk: Buffer) => {
            if (chunk.toString() === 'reset') socket.resetAndDestroy();
            resolve();
          }),
        ),
      );
    });
    const tunnel = await openTunnel('t-main', { remote: String(slam.port), check_port: 'false' });
    const active = () => svcd.server.tunnels.handles('t-main').map(({ handle }) => handle.activeConnections);
    try {
      // The target resets: the client gets an end (SSH carries no resets), and svcd lets go of the connection
      // although the client never ended its side.
      const first = await dial(Number(tunnel.lport));
      const firstEnded = new Promise((resolve) => first.once('end', resolve));
      first.write('reset');
      await firstEnded;
      await vi.waitFor(() => expect(active()).toEqual([0]));
      first.destroy();
      // The client resets: the target gets an end.
      const second = await dial(Number(tunnel.lport));
      second.write('hello');
      await vi.waitFor(() => expect(greeted).toHaveLength(2));
      await greeted[1];
      second.resetAndDestroy();
      await ended[1];
      await vi.waitFor(() => expect(active()).toEqual([0]));
    } finally {
      await del('t-main', tunnel.id, '?force=true');
      await slam.close();
    }
  });

  test('a small half-closed request is answered in full', async () => {
    const tunnel = await openTunnel('t-main', { remote: String(sink.port) });
    try {
      for (let i = 0; i < 3; i++) {
        const socket = await dial(Number(tunnel.lport));
        const reply = readAll(socket);
        socket.end('hello');
        expect((await reply).text).toBe('5 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824');
      }
    } finally {
      await del('t-main', tunnel.id, '?force=true');
    }
  });

  test('a slow reader holds the sender back instead of filling memory', async () => {
    sourceBytes = 200 * MB;
    const tunnel = await openTunnel('t-main', { remote: String(source.port) });
    try {
      const socket = await dial(Number(tunnel.lport));
      socket.pause();
      await new Promise((resolve) => setTimeout(resolve, 1500));
      // Kernel buffers of four sockets plus one SSH window (2 MiB) and stream buffers: well below 200 MB.
      expect(sent.written).toBeLessThan(40 * MB);
      expect(sent.written).toBeGreaterThan(0);
      socket.destroy();
    } finally {
      sourceBytes = 50 * MB;
      await del('t-main', tunnel.id, '?force=true');
    }
  });

  test('the acl refuses unlisted peers at once and lets listed ones in', async () => {
    const closed = await openTunnel('t-main', { remote: String(echo.port), acl: '10.0.0.0/8,2001:db8::/32' });
    const allowed = await openTunnel('t-main', { remote: String(echo.port), acl: '192.0.2.1,127.0.0.0/8' });
    try {
      expect(await outcome(Number(closed.lport))).toEqual({ bytes: 0 });
      const socket = await dial(Number(allowed.lport));
      socket.end('through');
      expect((await readAll(socket)).text).toBe('through');
    } finally {
      await del('t-main', closed.id);
      await del('t-main', allowed.id);
    }
  });

  test('an explicit local address and port; the port must be in the pool and free', async () => {
    const port = pool[4] ?? 0;
    const res = await put('t-main', { remote: String(echo.port), local: `127.0.0.1:${port}` });
    expect(res.status, res.text).toBe(200);
    expect(res.json.data).toMatchObject({ lhost: '127.0.0.1', lport: String(port) });
    try {
      const taken = await put('t-main', { remote: String(sink.port), local: `127.0.0.1:${port}` });
      expect(taken.status).toBe(409);
      expect(taken.json.errors[0]).toMatchObject({ code: 'ERR_LOCAL_PORT_IN_USE' });
      expect(taken.json.errors[0].title).toContain(String(port));
      for (const outside of [base + 2, base - 1, base + 6]) {
        const refused = await put('t-main', { remote: String(sink.port), local: `127.0.0.1:${outside}` });
        expect(refused.status).toBe(400);
        expect(refused.json.errors[0]).toMatchObject({ code: 'ERR_LOCAL_PORT_NOT_ALLOWED' });
        expect(refused.json.errors[0].detail).toContain(`${base}-${base + 1}`);
      }
    } finally {
      await del('t-main', res.json.data.id);
    }
  });

  test('a port held by another program is skipped; a full pool answers 409 ERR_NO_FREE_PORT', async () => {
    const blocker: Server = createServer();
    blocker.listen({ port: base, host: '0.0.0.0', exclusive: true });
    await once(blocker, 'listening');
    const ids: string[] = [];
    try {
      const ports: number[] = [];
      for (let i = 0; i < 4; i++) {
        const tunnel = await openTunnel('t-main', {
          remote: String(echo.port),
          acl: `10.0.0.${i + 1}`,
          check_port: 'false',
        });
        ids.push(tunnel.id);
        ports.push(Number(tunnel.lport));
      }
      expect([...ports].sort()).toEqual(pool.filter((p) => p !== base).sort());
      const full = await put('t-main', { remote: String(echo.port), acl: '10.0.0.99' });
      expect(full.status).toBe(409);
      expect(full.json.errors[0]).toMatchObject({ code: 'ERR_NO_FREE_PORT' });
      expect(full.json.errors[0].detail).toContain('used_ports minus excluded_ports');
    } finally {
      blocker.close();
      for (const id of ids) await del('t-main', id);
    }
  });

  test('the same remote and acl twice is 409 ERR_TUNNEL_EXISTS', async () => {
    const first = await openTunnel('t-main', { remote: `127.0.0.1:${echo.port}` });
    try {
      const again = await put('t-main', { remote: `127.0.0.1:${echo.port}` });
      expect(again.status).toBe(409);
      expect(again.json.errors[0].code).toBe('ERR_TUNNEL_EXISTS');
      // Another acl is another tunnel.
      const other = await openTunnel('t-main', { remote: `127.0.0.1:${echo.port}`, acl: '127.0.0.1' });
      expect((await del('t-main', other.id)).status).toBe(204);
    } finally {
      await del('t-main', first.id);
    }
    // Two identical requests at once: one tunnel.
    const racing = await Promise.all(
      [1, 2].map(() => put('t-main', { remote: String(sink.port), acl: '::1' })),
    );
    expect(racing.map((res) => res.status).sort()).toEqual([200, 409]);
    const winner = racing.find((res) => res.status === 200);
    await del('t-main', winner?.json.data.id);
  });

  test('a closed remote port is 409 ERR_REMOTE_PORT_CLOSED; check_port=false opens it anyway', async () => {
    const closedPort = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const res = await put('t-main', { remote: String(closedPort) });
    expect(res.status).toBe(409);
    expect(res.json.errors[0]).toMatchObject({ code: 'ERR_REMOTE_PORT_CLOSED' });
    expect(res.json.errors[0].title).toContain(String(closedPort));
    const unchecked = await openTunnel('t-main', { remote: String(closedPort), check_port: 'false' });
    try {
      // The agent cannot reach the target: the connection is closed without data.
      expect(await outcome(Number(unchecked.lport))).toEqual({ bytes: 0 });
    } finally {
      await del('t-main', unchecked.id);
    }
  });

  test('DELETE: busy is 409 unless force=true, which ends the connection; unknown ids 404; bad force 400', async () => {
    const tunnel = await openTunnel('t-main', { remote: String(echo.port) });
    const socket = await dial(Number(tunnel.lport));
    const ended = readAll(socket).catch(() => 'reset');
    socket.write('x');
    await vi.waitFor(() => expect(socket.bytesRead).toBe(1));
    const busy = await del('t-main', tunnel.id);
    expect(busy.status).toBe(409);
    expect(busy.json.errors[0]).toMatchObject({
      code: 'ERR_TUNNEL_BUSY',
      title: expect.stringContaining('1 active connection'),
    });
    const bad = await del('t-main', tunnel.id, '?force=maybe');
    expect(bad.status).toBe(400);
    expect(bad.json.errors[0].title).toContain('force');
    expect((await del('t-main', tunnel.id, '?force=true')).status).toBe(204);
    await ended;
    expect(socket.destroyed || socket.readableEnded).toBe(true);
    expect((await del('t-main', tunnel.id)).json.errors[0].code).toBe('ERR_TUNNEL_NOT_FOUND');
    expect((await del('t-main', '999')).status).toBe(404);
    expect((await del('nobody', '1')).json.errors[0].code).toBe('ERR_CLIENT_NOT_FOUND');
  });

  test('the idle timeout closes a tunnel nobody uses; an open connection keeps it', async () => {
    const tunnel = await openTunnel('t-main', {
      remote: String(echo.port),
      'skip-idle-timeout': 'false',
      'idle-timeout-minutes': '1',
    });
    const socket = await dial(Number(tunnel.lport));
    await new Promise((resolve) => setTimeout(resolve, 3 * MINUTE_MS));
    expect((await tunnelsOf('t-main')).map((t) => t.id)).toEqual([tunnel.id]);
    socket.end();
    await vi.waitFor(async () => expect(await tunnelsOf('t-main')).toEqual([]), { timeout: 5000 });
    expect(await outcome(Number(tunnel.lport))).toBe('refused');
  });

  test('auto-close closes the tunnel when its time is up', async () => {
    const tunnel = await openTunnel('t-main', { remote: String(echo.port), 'auto-close': '1s' });
    expect(tunnel).toMatchObject({ auto_close: 1 });
    await vi.waitFor(async () => expect(await tunnelsOf('t-main')).toEqual([]), { timeout: 5000 });
    expect(await outcome(Number(tunnel.lport))).toBe('refused');
  });

  test('bad input is a 4xx naming the parameter', async () => {
    const cases: [Record<string, string>, number, string, RegExp][] = [
      [{}, 400, 'ERR_INVALID_QUERY', /remote/],
      [{ remote: '0' }, 400, 'ERR_INVALID_QUERY', /remote port/],
      [{ remote: '70000' }, 400, 'ERR_INVALID_QUERY', /remote port/],
      [{ remote: 'abc' }, 400, 'ERR_INVALID_QUERY', /remote has no port/],
      [{ remote: '22', local: '127.0.0.1' }, 400, 'ERR_INVALID_QUERY', /local has no port/],
      [{ remote: '22', local: 'abc' }, 400, 'ERR_INVALID_QUERY', /local/],
      [{ remote: '22', acl: '0.0.0.0' }, 400, 'ERR_INVALID_ACL', /ACL/],
      [{ remote: '22', acl: '10.0.0.0/40' }, 400, 'ERR_INVALID_ACL', /ACL/],
      [
        { remote: '22', 'idle-timeout-minutes': '5', 'skip-idle-timeout': 'true' },
        400,
        'ERR_INVALID_QUERY',
        /idle-timeout-minutes/,
      ],
      [{ remote: '22', 'auto-close': '40d' }, 400, 'ERR_INVALID_QUERY', /auto-close/],
      [{ remote: '22', check_port: 'x' }, 400, 'ERR_INVALID_QUERY', /check_port/],
    ];
    for (const [query, status, code, title] of cases) {
      const res = await svcd.api.request(
        'PUT',
        `/clients/t-main/tunnels?${new URLSearchParams(query).toString()}`,
        { auth: AUTH },
      );
      expect(res.status, JSON.stringify(query)).toBe(status);
      expect(res.json.errors[0].code, JSON.stringify(query)).toBe(code);
      expect(res.json.errors[0].title, JSON.stringify(query)).toMatch(title);
    }
  });

  test('unknown client 404; 401 without credentials on both routes', async () => {
    const unknown = await put('nobody', { remote: '22' });
    expect(unknown.status).toBe(404);
    expect(unknown.json.errors[0].code).toBe('ERR_CLIENT_NOT_FOUND');
    const noCredentials = await svcd.api.request('PUT', `/clients/t-main/tunnels?remote=${echo.port}`);
    expect(noCredentials.status).toBe(401);
    expect(svcd.server.tunnels.handles('t-main')).toEqual([]);
    const anonymous = await svcd.api.request('DELETE', '/clients/t-main/tunnels/1');
    expect(anonymous.status).toBe(401);
  });
});

test("the agent's tunnel_allowed refusal is 409 ERR_TUNNEL_NOT_ALLOWED", async () => {
  const agent = await startAgent('t-strict', { tunnelAllowed: [`127.0.0.1:${sink.port}`] });
  try {
    const res = await put('t-strict', { remote: String(echo.port) });
    expect(res.status).toBe(409);
    expect(res.json.errors[0]).toMatchObject({
      code: 'ERR_TUNNEL_NOT_ALLOWED',
      title: expect.stringContaining('tunnel_allowed'),
    });
    const fine = await openTunnel('t-strict', { remote: String(sink.port) });
    const socket = await dial(Number(fine.lport));
    const reply = readAll(socket);
    socket.end('ok');
    expect((await reply).text).toMatch(/^2 /);
    // A stored tunnel keeps its port reserved; later tests pick ports from the same small pool.
    expect((await del('t-strict', fine.id, '?force=true')).status).toBe(204);
  } finally {
    await stopAgent(agent);
  }
});

test('a disconnect closes the listener; the reconnected client gets it back on the same port', async () => {
  const first = await startAgent('t-roam');
  const tunnel = await openTunnel('t-roam', { remote: String(echo.port) });
  await stopAgent(first);
  await vi.waitFor(() => expect(svcd.server.connections.get('t-roam')).toBeUndefined());
  expect(await outcome(Number(tunnel.lport))).toBe('refused');
  expect(await tunnelsOf('t-roam')).toEqual([]);
  const gone = await put('t-roam', { remote: String(sink.port) });
  expect(gone.status).toBe(404);
  expect(gone.json.errors[0].code).toBe('ERR_CLIENT_NOT_CONNECTED');

  const second = await startAgent('t-roam');
  try {
    await vi.waitFor(async () => expect(await tunnelsOf('t-roam')).toEqual([tunnel]), { timeout: 5000 });
    const socket = await dial(Number(tunnel.lport));
    socket.end('back again');
    expect((await readAll(socket)).text).toBe('back again');
  } finally {
    await del('t-roam', tunnel.id, '?force=true');
    await stopAgent(second);
  }
});

test('ports taken while the client was away: a pool port moves, an explicit one waits for the next reconnect', async () => {
  const first = await startAgent('t-away');
  const picked = await openTunnel('t-away', { remote: String(echo.port) });
  const explicitPort = pool.find((port) => port !== Number(picked.lport)) ?? 0;
  const explicit = await openTunnel('t-away', {
    remote: String(sink.port),
    local: `127.0.0.1:${explicitPort}`,
  });
  await stopAgent(first);
  await vi.waitFor(() => expect(svcd.server.connections.get('t-away')).toBeUndefined());
  const blockers = await Promise.all(
    [Number(picked.lport), explicitPort].map(async (port) => {
      const blocker = createServer().listen({ port, host: '0.0.0.0', exclusive: true });
      await once(blocker, 'listening');
      return blocker;
    }),
  );
  const second = await startAgent('t-away');
  let moved: { id: string; lport: string } | undefined;
  try {
    await vi.waitFor(
      async () => {
        const tunnels = await tunnelsOf('t-away');
        expect(tunnels.map((t) => t.id)).toEqual([picked.id]);
        expect(tunnels[0]?.lport).not.toBe(picked.lport);
        expect(pool).toContain(Number(tunnels[0]?.lport));
      },
      { timeout: 5000 },
    );
    [moved] = await tunnelsOf('t-away');
    const socket = await dial(Number(moved?.lport));
    socket.end('moved');
    expect((await readAll(socket)).text).toBe('moved');
  } finally {
    for (const blocker of blockers) blocker.close();
    await stopAgent(second);
  }
  // The explicit one was kept: with its port free again it is back at the next reconnect.
  const third = await startAgent('t-away');
  try {
    await vi.waitFor(async () => expect(await tunnelsOf('t-away')).toEqual([{ ...moved }, { ...explicit }]), {
      timeout: 5000,
    });
    const socket = await dial(explicitPort);
    const reply = readAll(socket);
    socket.end('kept');
    expect((await reply).text).toMatch(/^4 /);
  } finally {
    await del('t-away', picked.id, '?force=true');
    await del('t-away', explicit.id, '?force=true');
    await stopAgent(third);
  }
});

test('a stored tunnel of a client that is away can be deleted; it does not come back', async () => {
  const first = await startAgent('t-gone');
  const tunnel = await openTunnel('t-gone', { remote: String(echo.port) });
  await stopAgent(first);
  await vi.waitFor(() => expect(svcd.server.connections.get('t-gone')).toBeUndefined());
  expect((await del('t-gone', tunnel.id)).status).toBe(204);
  expect((await del('t-gone', tunnel.id)).status).toBe(404);
  const second = await startAgent('t-gone');
  try {
    const next = await openTunnel('t-gone', { remote: String(sink.port) });
    expect(Number(next.id)).toBeGreaterThan(Number(tunnel.id));
    expect((await tunnelsOf('t-gone')).map((t) => t.id)).toEqual([next.id]);
    await del('t-gone', next.id);
  } finally {
    await stopAgent(second);
  }
});

test('deleting a client deletes its stored tunnels', async () => {
  const first = await startAgent('t-deleted');
  const tunnel = await openTunnel('t-deleted', { remote: String(echo.port) });
  await stopAgent(first);
  await vi.waitFor(() => expect(svcd.server.connections.get('t-deleted')).toBeUndefined());
  expect((await svcd.api.delete('/clients/t-deleted', { auth: AUTH })).status).toBe(204);
  const second = await startAgent('t-deleted');
  try {
    const next = await openTunnel('t-deleted', { remote: String(sink.port) });
    // Nothing came back and the ids start again: the old definition is gone.
    expect(next.id).toBe(tunnel.id);
    expect((await tunnelsOf('t-deleted')).map((t) => t.rport)).toEqual([String(sink.port)]);
    await del('t-deleted', next.id);
  } finally {
    await stopAgent(second);
  }
});

test('svcd shutdown closes the tunnel listeners', async () => {
  await startAgent('t-last');
  const tunnel = await openTunnel('t-last', { remote: String(echo.port) });
  const socket = await dial(Number(tunnel.lport));
  const ended = readAll(socket).catch(() => 'reset');
  stopped = true;
  await svcd.stop();
  await ended;
  expect(await outcome(Number(tunnel.lport))).toBe('refused');
});
