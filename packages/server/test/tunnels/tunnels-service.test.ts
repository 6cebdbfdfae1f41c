/**
 * The tunnels of this node (gateway/tunnel-host.ts, reached through the API's TunnelsService and the local
 * dispatch, wired as svcd wires them) with a scripted agent and a real (in-memory SQLite) tunnel store: races,
 * re-opens, restarts, expiry, error mapping.
 */
import { afterEach, describe, expect, test, vi } from 'vitest';
import type { ClientRepository, StoredClient } from '../../src/core/clients/ports.js';
import { PortPool } from '../../src/core/tunnels/port-pool.js';
import {
  ListenError,
  TunnelAgentError,
  type ExpiryReason,
  type ListenSpec,
  type TunnelAgent,
  type TunnelHandle,
  type TunnelTarget,
} from '../../src/core/tunnels/ports.js';
import { parseTunnelRequest } from '../../src/core/tunnels/tunnel-request.js';
import type { LiveConnection } from '../../src/gateway/live-connections.js';
import { singleNodeSeam } from '../../src/client-seam.js';
import { TunnelsService } from '../../src/core/tunnels/tunnels-service.js';
import type { UserRecord } from '../../src/core/users/user-store.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { SqlTunnelRepository } from '../../src/storage/tunnel-repository.js';
import { makeHello } from '../../../../test-support/agent-client.js';

class MemoryRepository implements ClientRepository {
  loadAll = () => Promise.resolve([] as StoredClient[]);
  save = () => Promise.resolve();
  markAllDisconnected = () => Promise.resolve();
  markDisconnected = () => Promise.resolve();
  delete = () => Promise.resolve(true);
  deleteDisconnectedBefore = () => Promise.resolve(0);
}

const USER: UserRecord = {
  username: 'u',
  passwordHash: '',
  groups: [],
  twoFaSendTo: null,
  totpSecret: null,
  passwordExpired: false,
};

/** An agent whose answers the test scripts; ports in `busy` are "in use" on this machine. */
class FakeAgent implements TunnelAgent {
  allowedAnswer = true;
  portOpen = true;
  busy = new Set<number>();
  forwards: string[] = [];
  listens: ListenSpec[] = [];
  expire: ((reason: ExpiryReason) => void)[] = [];
  handles: (TunnelHandle & { closed: boolean; activeConnections: number })[] = [];
  beforeForward: () => Promise<void> = () => Promise.resolve();
  forwardError: Error | undefined;

  allowed = () => Promise.resolve(this.allowedAnswer);
  checkPort = () => Promise.resolve(this.portOpen ? { open: true } : { open: false, error: 'ECONNREFUSED' });
  async forward(target: TunnelTarget) {
    await this.beforeForward();
    if (this.forwardError) throw this.forwardError;
    this.forwards.push(`+${target.host}:${target.port}`);
  }
  unforward(target: TunnelTarget) {
    this.forwards.push(`-${target.host}:${target.port}`);
    return Promise.resolve();
  }
  listen(spec: ListenSpec, onExpired: (reason: ExpiryReason) => void) {
    this.listens.push(spec);
    if (this.busy.has(spec.port)) return Promise.reject(new ListenError('in_use', 'in use'));
    const handle = {
      port: spec.port,
      activeConnections: 0,
      closed: false,
      close() {
        handle.closed = true;
        return Promise.resolve();
      },
    };
    this.handles.push(handle);
    this.expire.push(onExpired);
    return Promise.resolve(handle);
  }
}

const databases: Database[] = [];
afterEach(async () => {
  for (const database of databases.splice(0)) await database.close();
});

async function memoryDatabase(): Promise<Database> {
  const settings = {
    db_type: 'sqlite',
    db_name: ':memory:',
    db_host: '',
    db_user: '',
    db_password: '',
  } as const;
  const database = await openDatabase(settings, { dataDir: '/nonexistent' });
  databases.push(database);
  return database;
}

interface SetupOptions {
  used?: string[];
  now?: () => Date;
  /** The database of an earlier "process" (a restart); a fresh one by default. */
  database?: Database;
  publicHost?: string;
}

async function setup(options: SetupOptions = {}) {
  const database = options.database ?? (await memoryDatabase());
  const repository = new SqlTunnelRepository(database);
  const now = options.now ?? (() => new Date());
  const log = { info: vi.fn(), warn: vi.fn() };
  const {
    directory,
    connections,
    tunnelHost: host,
    dispatch,
  } = singleNodeSeam({
    nodeId: 'node-1',
    clients: new MemoryRepository(),
    tunnels: repository,
    tunnelSettings: {
      pool: new PortPool(options.used ?? ['5000-5002'], []),
      checkPortTimeoutMs: 1000,
      minuteMs: 60_000,
      publicHost: options.publicHost,
      random: () => 0,
    },
    clock: { now },
    log,
  });
  const service = new TunnelsService(directory, dispatch);
  const connect = (id = 'c1', session = 's1') => {
    const agent = new FakeAgent();
    const connection: LiveConnection = { sessionId: session, close: () => undefined, tunnels: agent };
    connections.attach(connection, makeHello({ client_id: id, session_id: session }), {
      clientAuthId: 'a',
      address: 'x',
    });
    return { agent, connection };
  };
  const open = (query: Record<string, string>, id = 'c1') =>
    service.open(USER, id, parseTunnelRequest({ check_port: 'false', ...query }), 'api.example.org');
  /** The open tunnels shown in the client record, once the re-opening after a connect has finished. */
  const shown = async (id: string, ids: string[]) => {
    await vi.waitFor(() => expect(directory.get(id)?.tunnels.map((t) => t.id)).toEqual(ids));
    return directory.get(id)?.tunnels ?? [];
  };
  return { database, repository, directory, connections, host, service, connect, open, shown, log };
}

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'ok',
    (err: { code?: string }) => err.code,
  );

describe('TunnelsService', () => {
  test('opens on the first free pool port, shows the tunnel in the record, deletes it', async () => {
    const { directory, service, connect, open } = await setup();
    const { agent } = connect();
    agent.busy.add(5000);
    const tunnel = await open({ remote: '22', acl: '10.0.0.0/8', 'auto-close': '90s' });
    expect(tunnel).toMatchObject({ id: '1', lhost: '0.0.0.0', lport: '5001', rport: '22', auto_close: 90 });
    expect(agent.listens.map((l) => l.port)).toEqual([5000, 5001]);
    expect(agent.listens[1]).toMatchObject({ idleMs: 5 * 60_000, clientId: 'c1', tunnelId: '1' });
    expect(directory.get('c1')?.tunnels).toEqual([tunnel]);
    await service.delete(USER, 'c1', '1', false);
    expect(directory.get('c1')?.tunnels).toEqual([]);
    expect(agent.forwards).toEqual(['+127.0.0.1:22', '-127.0.0.1:22']);
    expect(agent.handles[0]?.closed).toBe(true);
  });

  test('every pool port busy: 409 ERR_NO_FREE_PORT and the agent registration is undone', async () => {
    const { connect, open } = await setup();
    const { agent } = connect();
    for (const port of [5000, 5001, 5002]) agent.busy.add(port);
    expect(await codeOf(open({ remote: '22' }))).toBe('ERR_NO_FREE_PORT');
    expect(agent.forwards).toEqual(['+127.0.0.1:22', '-127.0.0.1:22']);
  });

  test('explicit ports: outside the pool 400, taken by a tunnel or the machine 409', async () => {
    const { connect, open } = await setup();
    const { agent } = connect();
    expect(await codeOf(open({ remote: '22', local: '4999' }))).toBe('ERR_LOCAL_PORT_NOT_ALLOWED');
    await open({ remote: '22', local: '5002' });
    expect(await codeOf(open({ remote: '23', local: '5002' }))).toBe('ERR_LOCAL_PORT_IN_USE');
    agent.busy.add(5001);
    expect(await codeOf(open({ remote: '24', local: '127.0.0.1:5001' }))).toBe('ERR_LOCAL_PORT_IN_USE');
  });

  test('agent answers map to 409s; unknown and disconnected clients to 404s', async () => {
    const { connections, connect, open } = await setup();
    expect(await codeOf(open({ remote: '22' }, 'ghost'))).toBe('ERR_CLIENT_NOT_FOUND');
    const { agent, connection } = connect();
    agent.allowedAnswer = false;
    expect(await codeOf(open({ remote: '22' }))).toBe('ERR_TUNNEL_NOT_ALLOWED');
    agent.allowedAnswer = true;
    agent.portOpen = false;
    expect(await codeOf(open({ remote: '22', check_port: 'true' }))).toBe('ERR_REMOTE_PORT_CLOSED');
    agent.forwardError = new TunnelAgentError('not_allowed', 'no');
    expect(await codeOf(open({ remote: '22' }))).toBe('ERR_TUNNEL_NOT_ALLOWED');
    agent.forwardError = new TunnelAgentError('failed', 'boom');
    expect(await codeOf(open({ remote: '22' }))).toBe('ERR_TUNNEL_FAILED');
    connections.detach('c1', connection);
    expect(await codeOf(open({ remote: '22' }))).toBe('ERR_CLIENT_NOT_CONNECTED');
  });

  test('a client that disconnects while its tunnel is being opened gets no listener', async () => {
    const { connections, host, connect, open } = await setup();
    const { agent, connection } = connect();
    let release: (() => void) | undefined;
    agent.beforeForward = () => new Promise((resolve) => (release = resolve));
    const opening = codeOf(open({ remote: '22' }));
    await vi.waitFor(() => expect(release).toBeDefined());
    connections.detach('c1', connection);
    release?.();
    expect(await opening).toBe('ERR_CLIENT_NOT_CONNECTED');
    expect(agent.handles.every((h) => h.closed)).toBe(true);
    expect(host.handles('c1')).toEqual([]);
  });

  test('busy tunnels need force; an expiry removes the tunnel and tells the agent', async () => {
    const { directory, service, connect, open, log } = await setup();
    const { agent } = connect();
    const first = await open({ remote: '22' });
    const second = await open({ remote: '23' });
    const handle = agent.handles[0];
    if (handle) handle.activeConnections = 2;
    expect(await codeOf(service.delete(USER, 'c1', first.id, false))).toBe('ERR_TUNNEL_BUSY');
    await service.delete(USER, 'c1', first.id, true);
    expect(await codeOf(service.delete(USER, 'c1', first.id, true))).toBe('ERR_TUNNEL_NOT_FOUND');
    agent.expire[1]?.('idle timeout');
    expect(directory.get('c1')?.tunnels).toEqual([]);
    expect(agent.forwards).toContain('-127.0.0.1:23');
    expect(log.info).toHaveBeenCalledWith(
      expect.objectContaining({ tunnel_id: second.id, reason: 'idle timeout' }),
      'tunnel closed: idle timeout',
    );
  });

  test('reconnect: same ports, another pool port when taken, explicit ones kept for later, auto-closed ones gone', async () => {
    let now = 1_000_000;
    const { directory, connections, host, repository, connect, open, shown, log } = await setup({
      used: ['5000-5005'],
      now: () => new Date(now),
    });
    const first = connect();
    const a = await open({ remote: '22' });
    const b = await open({ remote: '23' });
    const c = await open({ remote: '24', local: '5005' });
    const d = await open({ remote: '25', 'auto-close': '1m' });
    connections.detach('c1', first.connection);
    expect(first.agent.handles.every((h) => h.closed)).toBe(true);
    expect(directory.get('c1')?.tunnels).toEqual([]);
    now += 120_000;
    const attach = (session: string, agent: FakeAgent) => {
      const connection = { sessionId: session, close: () => undefined, tunnels: agent };
      connections.attach(connection, makeHello({ client_id: 'c1', session_id: session }), {
        clientAuthId: 'a',
        address: 'x',
      });
      return connection;
    };
    const second = new FakeAgent();
    second.busy.add(Number(b.lport));
    second.busy.add(5005);
    const secondConnection = attach('s2', second);
    const [again, moved] = await shown('c1', [a.id, b.id]);
    expect(again).toEqual(a);
    expect(moved?.lport).not.toBe(b.lport);
    expect(host.handles('c1').map((h) => h.id)).toEqual([a.id, b.id]);
    expect(log.warn).toHaveBeenCalledWith(
      expect.objectContaining({ client_id: 'c1', tunnel: expect.objectContaining({ id: c.id }) }),
      'tunnel could not be re-opened after the client reconnected; kept, tried again at the next reconnect',
    );
    expect(log.info).toHaveBeenCalledWith(
      { client_id: 'c1', tunnel_id: d.id },
      'tunnel auto-closed while the client was away',
    );
    await host.closeAll();
    const stored = await repository.listByClient('c1');
    expect(stored.map((t) => [String(t.id), String(t.lport)])).toEqual([
      [a.id, a.lport],
      [b.id, moved?.lport],
      [c.id, '5005'],
    ]);
    // The ids go on from where they were; the kept tunnel still counts as a duplicate.
    connections.detach('c1', secondConnection);
    const third = new FakeAgent();
    attach('s3', third);
    const all = await shown('c1', [a.id, b.id, c.id]);
    expect(all[2]).toEqual(c);
    expect(await codeOf(open({ remote: '24', local: '5004' }))).toBe('ERR_TUNNEL_EXISTS');
    expect((await open({ remote: '26' })).id).toBe('5');
  });

  test('restart: a new service on the same database re-creates the tunnels with their ids, ports and urls', async () => {
    const before = await setup({ used: ['5000-5009'] });
    before.connect();
    const a = await before.open({ remote: '22', acl: '10.0.0.0/8', 'auto-close': '1h' });
    const b = await before.open({ remote: '127.0.0.1:3389', local: '127.0.0.1:5007', scheme: '' });
    const c = await before.open({ remote: '8443', scheme: 'https', 'idle-timeout-minutes': '3' });
    expect(a).toMatchObject({ scheme: 'ssh', tunnel_url: `ssh://api.example.org:${a.lport}` });
    expect(b).toMatchObject({ scheme: null, tunnel_url: null, lhost: '127.0.0.1', lport: '5007' });
    expect(c).toMatchObject({ scheme: 'https', tunnel_url: `https://api.example.org:${c.lport}` });
    await before.host.closeAll();

    const after = await setup({ used: ['5000-5009'], database: before.database });
    // Another client connecting first gets none of the stored ports.
    const other = after.connect('c2', 's9');
    const fresh = await after.open({ remote: '22' }, 'c2');
    expect([a.lport, b.lport, c.lport]).not.toContain(fresh.lport);
    const kept = await codeOf(after.open({ remote: '23', local: b.lport }, 'c2'));
    expect(kept).toBe('ERR_LOCAL_PORT_IN_USE');
    expect(other.agent.listens.map((l) => l.port)).toEqual([Number(fresh.lport)]);

    const { agent } = after.connect();
    expect(await after.shown('c1', ['1', '2', '3'])).toEqual([a, b, c]);
    expect(agent.listens.map((l) => [l.tunnelId, l.host, l.port, l.closeAt])).toEqual([
      ['1', '0.0.0.0', Number(a.lport), Date.parse(a.created_at) + 3_600_000],
      ['2', '127.0.0.1', 5007, undefined],
      ['3', '0.0.0.0', Number(c.lport), undefined],
    ]);
    expect(agent.listens[2]?.idleMs).toBe(3 * 60_000);
    expect(agent.listens[0]?.acl?.text).toBe('10.0.0.0/8');
    expect(agent.forwards).toEqual(['+127.0.0.1:22', '+127.0.0.1:3389', '+127.0.0.1:8443']);
    expect((await after.open({ remote: '24' })).id).toBe('4');
  });

  test('another node: the client moved there gets its tunnels back on that node, pool ports from its own pool', async () => {
    const before = await setup({ used: ['5000-5009'], publicHost: 'node-a.example' });
    before.connect();
    const picked = await before.open({ remote: '22', acl: '10.0.0.0/8', 'idle-timeout-minutes': '30' });
    const asked = await before.open({ remote: '8080', local: '5005', scheme: 'http' });
    expect(picked.tunnel_url).toBe(`ssh://node-a.example:${picked.lport}`);
    // node-a dies: the definitions stay stored.
    await before.host.closeAll();

    const after = await setup({
      used: ['6000-6009'],
      publicHost: 'node-b.example',
      database: before.database,
    });
    const { agent } = after.connect();
    const [pickedNow, askedNow] = await after.shown('c1', [picked.id, asked.id]);
    expect(pickedNow).toEqual({
      ...picked,
      lport: '6000',
      tunnel_url: 'ssh://node-b.example:6000',
    });
    expect(askedNow).toEqual({ ...asked, tunnel_url: 'http://node-b.example:5005' });
    // The old pool port is not even tried; the moved port is stored.
    expect(agent.listens.map((l) => l.port)).toEqual([6000, 5005]);
    await vi.waitFor(async () =>
      expect((await after.repository.listByClient('c1')).map((t) => [t.id, t.lport])).toEqual([
        [1, 6000],
        [2, 5005],
      ]),
    );
  });

  test('tunnel_url: a specific lhost, else the configured public host, else the host the API was reached by', async () => {
    const { connect, open } = await setup({ used: ['5000-5009'], publicHost: 'svc.example.com' });
    connect();
    expect(await open({ remote: '5900' })).toMatchObject({
      scheme: 'vnc',
      tunnel_url: expect.stringMatching(/^vnc:\/\/svc\.example\.com:500\d$/),
    });
    expect(await open({ remote: '80', local: '[::1]:5008' })).toMatchObject({
      scheme: 'http',
      tunnel_url: 'http://[::1]:5008',
    });
    expect(await open({ remote: '81', local: '0.0.0.0:5009', scheme: 'my-app' })).toMatchObject({
      scheme: 'my-app',
      tunnel_url: 'my-app://svc.example.com:5009',
    });
    expect(await open({ remote: '82' })).toMatchObject({ scheme: null, tunnel_url: null });
  });

  test('DELETE and the expiries delete the stored definition; a tunnel of a client that is away can be deleted', async () => {
    const { connections, repository, service, connect, open } = await setup();
    const { agent, connection } = connect();
    const a = await open({ remote: '22' });
    const b = await open({ remote: '23' });
    const c = await open({ remote: '24' });
    await service.delete(USER, 'c1', a.id, false);
    agent.expire[1]?.('idle timeout');
    await vi.waitFor(async () => expect((await repository.listByClient('c1')).map((t) => t.id)).toEqual([3]));
    connections.detach('c1', connection);
    expect(await codeOf(service.delete(USER, 'c1', b.id, false))).toBe('ERR_TUNNEL_NOT_FOUND');
    expect(await codeOf(service.delete(USER, 'c1', 'x', false))).toBe('ERR_TUNNEL_NOT_FOUND');
    await service.delete(USER, 'c1', c.id, false);
    expect(await repository.listByClient('c1')).toEqual([]);
    expect(await codeOf(service.delete(USER, 'c9', '1', false))).toBe('ERR_CLIENT_NOT_FOUND');
  });
});
