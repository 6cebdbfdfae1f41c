/** The tunnel service's bookkeeping with a scripted agent: races, re-opens, expiry, error mapping. */
import { describe, expect, test, vi } from 'vitest';
import { ClientRegistry, type LiveConnection } from '../../src/core/clients/client-registry.js';
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
import { TunnelsService } from '../../src/core/tunnels/tunnels-service.js';
import type { UserRecord } from '../../src/core/users/user-store.js';
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

function setup(options: { used?: string[]; now?: () => Date } = {}) {
  const registry = new ClientRegistry(
    new MemoryRepository(),
    { now: options.now ?? (() => new Date()) },
    { info: () => undefined, warn: () => undefined },
  );
  const log = { info: vi.fn(), warn: vi.fn() };
  const service = new TunnelsService(
    registry,
    {
      pool: new PortPool(options.used ?? ['5000-5002'], []),
      checkPortTimeoutMs: 1000,
      minuteMs: 60_000,
      random: () => 0,
    },
    { now: options.now ?? (() => new Date()) },
    log,
  );
  const connect = (id = 'c1', session = 's1') => {
    const agent = new FakeAgent();
    const connection: LiveConnection = { sessionId: session, close: () => undefined, tunnels: agent };
    registry.attach(connection, makeHello({ client_id: id, session_id: session }), {
      clientAuthId: 'a',
      address: 'x',
    });
    return { agent, connection };
  };
  const open = (query: Record<string, string>, id = 'c1') =>
    service.open(USER, id, parseTunnelRequest({ check_port: 'false', ...query }));
  return { registry, service, connect, open, log };
}

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'ok',
    (err: { code?: string }) => err.code,
  );

describe('TunnelsService', () => {
  test('opens on the first free pool port, shows the tunnel in the record, deletes it', async () => {
    const { registry, service, connect, open } = setup();
    const { agent } = connect();
    agent.busy.add(5000);
    const tunnel = await open({ remote: '22', acl: '10.0.0.0/8', 'auto-close': '90s' });
    expect(tunnel).toMatchObject({ id: '1', lhost: '0.0.0.0', lport: '5001', rport: '22', auto_close: 90 });
    expect(agent.listens.map((l) => l.port)).toEqual([5000, 5001]);
    expect(agent.listens[1]).toMatchObject({ idleMs: 5 * 60_000, clientId: 'c1', tunnelId: '1' });
    expect(registry.get('c1')?.tunnels).toEqual([tunnel]);
    await service.delete(USER, 'c1', '1', false);
    expect(registry.get('c1')?.tunnels).toEqual([]);
    expect(agent.forwards).toEqual(['+127.0.0.1:22', '-127.0.0.1:22']);
    expect(agent.handles[0]?.closed).toBe(true);
  });

  test('every pool port busy: 409 ERR_NO_FREE_PORT and the agent registration is undone', async () => {
    const { connect, open } = setup();
    const { agent } = connect();
    for (const port of [5000, 5001, 5002]) agent.busy.add(port);
    expect(await codeOf(open({ remote: '22' }))).toBe('ERR_NO_FREE_PORT');
    expect(agent.forwards).toEqual(['+127.0.0.1:22', '-127.0.0.1:22']);
  });

  test('explicit ports: outside the pool 400, taken by a tunnel or the machine 409', async () => {
    const { connect, open } = setup();
    const { agent } = connect();
    expect(await codeOf(open({ remote: '22', local: '4999' }))).toBe('ERR_LOCAL_PORT_NOT_ALLOWED');
    await open({ remote: '22', local: '5002' });
    expect(await codeOf(open({ remote: '23', local: '5002' }))).toBe('ERR_LOCAL_PORT_IN_USE');
    agent.busy.add(5001);
    expect(await codeOf(open({ remote: '24', local: '127.0.0.1:5001' }))).toBe('ERR_LOCAL_PORT_IN_USE');
  });

  test('agent answers map to 409s; unknown and disconnected clients to 404s', async () => {
    const { registry, connect, open } = setup();
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
    registry.detach('c1', connection);
    expect(await codeOf(open({ remote: '22' }))).toBe('ERR_CLIENT_NOT_CONNECTED');
  });

  test('a client that disconnects while its tunnel is being opened gets no listener', async () => {
    const { registry, service, connect, open } = setup();
    const { agent, connection } = connect();
    let release: (() => void) | undefined;
    agent.beforeForward = () => new Promise((resolve) => (release = resolve));
    const opening = codeOf(open({ remote: '22' }));
    await vi.waitFor(() => expect(release).toBeDefined());
    registry.detach('c1', connection);
    release?.();
    expect(await opening).toBe('ERR_CLIENT_NOT_CONNECTED');
    expect(agent.handles.every((h) => h.closed)).toBe(true);
    expect(service.handles('c1')).toEqual([]);
  });

  test('busy tunnels need force; an expiry removes the tunnel and tells the agent', async () => {
    const { registry, service, connect, open, log } = setup();
    const { agent } = connect();
    const first = await open({ remote: '22' });
    const second = await open({ remote: '23' });
    const handle = agent.handles[0];
    if (handle) handle.activeConnections = 2;
    expect(await codeOf(service.delete(USER, 'c1', first.id, false))).toBe('ERR_TUNNEL_BUSY');
    await service.delete(USER, 'c1', first.id, true);
    expect(await codeOf(service.delete(USER, 'c1', first.id, true))).toBe('ERR_TUNNEL_NOT_FOUND');
    agent.expire[1]?.('idle timeout');
    expect(registry.get('c1')?.tunnels).toEqual([]);
    expect(agent.forwards).toContain('-127.0.0.1:23');
    expect(log.info).toHaveBeenCalledWith(
      expect.objectContaining({ tunnel_id: second.id, reason: 'idle timeout' }),
      'tunnel closed: idle timeout',
    );
  });

  test('reconnect: same ports, another pool port when taken, explicit ones dropped, auto-closed ones gone', async () => {
    let now = 1_000_000;
    const { registry, service, connect, open, log } = setup({
      used: ['5000-5005'],
      now: () => new Date(now),
    });
    const first = connect();
    const a = await open({ remote: '22' });
    const b = await open({ remote: '23' });
    const c = await open({ remote: '24', local: '5005' });
    const d = await open({ remote: '25', 'auto-close': '1m' });
    registry.detach('c1', first.connection);
    expect(first.agent.handles.every((h) => h.closed)).toBe(true);
    expect(registry.get('c1')?.tunnels).toEqual([]);
    now += 120_000;
    const second = new FakeAgent();
    second.busy.add(Number(b.lport));
    second.busy.add(5005);
    registry.attach(
      { sessionId: 's2', close: () => undefined, tunnels: second },
      makeHello({ client_id: 'c1', session_id: 's2' }),
      {
        clientAuthId: 'a',
        address: 'x',
      },
    );
    await vi.waitFor(() => expect(registry.get('c1')?.tunnels.map((t) => t.id)).toEqual([a.id, b.id]));
    const [again, moved] = registry.get('c1')?.tunnels ?? [];
    expect(again).toEqual(a);
    expect(moved?.lport).not.toBe(b.lport);
    expect(service.handles('c1').map((h) => h.id)).toEqual([a.id, b.id]);
    expect(log.warn).toHaveBeenCalledWith(
      expect.objectContaining({ client_id: 'c1', tunnel: expect.objectContaining({ id: c.id }) }),
      'tunnel could not be re-opened after the client reconnected; removed',
    );
    expect(log.info).toHaveBeenCalledWith(
      { client_id: 'c1', tunnel_id: d.id },
      'tunnel auto-closed while the client was away',
    );
    // The ids go on from where they were.
    expect((await open({ remote: '26' })).id).toBe('5');
  });
});
