import { describe, expect, test } from 'vitest';
import { CLIENT_LIST } from '../../src/core/clients/client-list.js';
import { CachedClientDirectory } from '../../src/core/clients/cached-client-directory.js';
import { LocalClientEvents } from '../../src/core/clients/local-client-events.js';
import { LiveConnections, type LiveConnection } from '../../src/gateway/live-connections.js';
import { ClientsService } from '../../src/core/clients/clients-service.js';
import type { ClientRepository, StoredClient } from '../../src/core/clients/ports.js';
import { applyListQuery, parseListQuery } from '../../../protocol/src/index.js';
import { makeHello } from '../../../../test-support/agent-client.js';

class MemoryRepository implements ClientRepository {
  readonly rows = new Map<string, StoredClient>();
  loadAll = () => Promise.resolve([...this.rows.values()]);
  save = (client: StoredClient) => (this.rows.set(client.id, structuredClone(client)), Promise.resolve());
  markAllDisconnected = (at: number) => {
    for (const row of this.rows.values())
      if (row.connectionState === 'connected')
        Object.assign(row, { connectionState: 'disconnected', disconnectedAt: at, owner: null });
    return Promise.resolve();
  };
  markDisconnected = (ids: readonly string[], at: number) => {
    for (const id of ids) {
      const row = this.rows.get(id);
      if (row) Object.assign(row, { connectionState: 'disconnected', disconnectedAt: at, owner: null });
    }
    return Promise.resolve();
  };
  delete = (id: string) => Promise.resolve(this.rows.delete(id));
  deleteDisconnectedBefore = () => Promise.resolve(0);
}

const quiet = { info: () => undefined, warn: () => undefined };
const who = { clientAuthId: 'auth-1', address: '192.0.2.x:1000' };

/** A real directory and events over the repository, and this node's live connections on them. */
function node(repository: ClientRepository, now: () => Date) {
  const clock = { now };
  const events = new LocalClientEvents();
  const directory = new CachedClientDirectory(repository, events, 'node-1', clock, quiet);
  return { events, directory, connections: new LiveConnections(directory, clock) };
}

function connection(sessionId: string): LiveConnection & { closedWith?: string } {
  const c: LiveConnection & { closedWith?: string } = {
    sessionId,
    close: (reason) => void (c.closedWith = reason),
  };
  return c;
}

describe('LiveConnections', () => {
  test('closeAll closes every connection and stores all of them as disconnected, after their queued writes', async () => {
    const repository = new MemoryRepository();
    let now = new Date('2026-11-24T10:00:00Z');
    const { directory, connections } = node(repository, () => now);
    const a = connection('sa');
    const b = connection('sb');
    expect(connections.attach(a, makeHello({ client_id: 'a', session_id: 'sa' }), who).ok).toBe(true);
    expect(connections.attach(b, makeHello({ client_id: 'b', session_id: 'sb' }), who).ok).toBe(true);
    now = new Date('2026-11-24T11:00:00Z');
    await connections.closeAll('svcd is shutting down');
    expect([a.closedWith, b.closedWith]).toEqual(['svcd is shutting down', 'svcd is shutting down']);
    for (const id of ['a', 'b']) {
      expect(repository.rows.get(id)).toMatchObject({
        connectionState: 'disconnected',
        disconnectedAt: now.getTime(),
      });
      expect(directory.get(id)).toMatchObject({
        connection_state: 'disconnected',
        disconnected_at: now.toISOString(),
      });
    }
    expect(directory.counts()).toEqual({ connected: 0, disconnected: 2 });
    expect(connections.size).toBe(0);
  });

  test('refuses a second session for a connected id, replaces the same session', async () => {
    const repository = new MemoryRepository();
    const { directory, connections } = node(repository, () => new Date());
    const first = connection('s1');
    expect(connections.attach(first, makeHello({ client_id: 'x', session_id: 's1' }), who).ok).toBe(true);
    const other = connection('s2');
    expect(connections.attach(other, makeHello({ client_id: 'x', session_id: 's2' }), who)).toEqual({
      ok: false,
      message: "client 'x' is already connected",
    });
    const again = connection('s1');
    expect(connections.attach(again, makeHello({ client_id: 'x', session_id: 's1' }), who).ok).toBe(true);
    expect(first.closedWith).toMatch(/replaced/);
    connections.detach('x', first); // the replaced connection ending changes nothing
    expect(directory.get('x')?.connection_state).toBe('connected');
    expect(connections.get('x')).toBe(again);
    expect(directory.countByCredential('auth-1')).toBe(1);
    connections.detach('x', again);
    expect(directory.get('x')?.connection_state).toBe('disconnected');
    expect(connections.get('x')).toBeUndefined();
    await directory.flush();
    expect(repository.rows.get('x')).toMatchObject({
      connectionState: 'disconnected',
      clientAuthId: 'auth-1',
    });
  });

  test('facts from a connection that no longer holds the client are ignored', () => {
    const { directory, connections } = node(new MemoryRepository(), () => new Date());
    const first = connection('s1');
    connections.attach(first, makeHello({ client_id: 'x', session_id: 's1', tags: ['old'] }), who);
    const update = { tags: ['new'], labels: {}, facts: makeHello().facts };
    expect(connections.updateFacts('x', connection('s1'), update)).toBe(false);
    expect(directory.get('x')?.tags).toEqual(['old']);
    expect(connections.updateFacts('x', first, update)).toBe(true);
    expect(directory.get('x')?.tags).toEqual(['new']);
  });

  test('load marks stored clients disconnected and restores their records', async () => {
    const repository = new MemoryRepository();
    const before = node(repository, () => new Date());
    before.connections.attach(
      connection('s'),
      makeHello({ client_id: 'y', tags: ['t'], labels: { a: 'b' } }),
      who,
    );
    await before.directory.flush();
    const after = node(repository, () => new Date('2030-01-01T00:00:00Z'));
    await after.directory.load();
    expect(after.directory.get('y')).toEqual({
      ...before.directory.get('y'),
      connection_state: 'disconnected',
      disconnected_at: '2030-01-01T00:00:00.000Z',
    });
    expect(after.directory.counts()).toEqual({ connected: 0, disconnected: 1 });
  });

  test('disconnectByCredential closes only that credential’s connections', async () => {
    const { directory, connections } = node(new MemoryRepository(), () => new Date());
    const a = connection('a');
    const b = connection('b');
    connections.attach(a, makeHello({ client_id: 'a' }), who);
    connections.attach(b, makeHello({ client_id: 'b' }), { ...who, clientAuthId: 'auth-2' });
    expect(await connections.disconnectByCredential('auth-2', 'its client credential was removed')).toBe(1);
    expect([a.closedWith, b.closedWith]).toEqual([undefined, 'its client credential was removed']);
    expect(directory.counts()).toEqual({ connected: 1, disconnected: 1 });
    expect(directory.countByCredential('auth-2')).toBe(0);
  });

  test('disconnect closes one client’s connection; false for a client this node does not hold', async () => {
    const { directory, connections } = node(new MemoryRepository(), () => new Date());
    const a = connection('a');
    connections.attach(a, makeHello({ client_id: 'a' }), who);
    expect(await connections.disconnect('nobody', 'test')).toBe(false);
    expect(await connections.disconnect('a', 'test')).toBe(true);
    expect(a.closedWith).toBe('test');
    expect(directory.get('a')?.connection_state).toBe('disconnected');
  });
});

describe('ClientsService.list', () => {
  test('orders exactly as the list grammar does on records in id order, for every sort', async () => {
    const { directory, connections } = node(new MemoryRepository(), () => new Date());
    const names = ['b', 'B', 'a', 'ä', 'A', 'a ', 'b', '', 'Zed', 'zed'];
    names.forEach((name, i) =>
      connections.attach(
        connection(`s${i}`),
        makeHello({
          client_id: `id-${'XxYy'[i % 4]}${i}`,
          name,
          version: `${i % 3}`,
          facts: { hostname: name.toUpperCase() },
        }),
        who,
      ),
    );
    connections.detach('id-x1', connections.get('id-x1') as LiveConnection);
    const service = new ClientsService(directory);
    for (const sort of [
      'id',
      '-id',
      'name',
      '-name',
      'hostname,-version',
      'version,-name',
      'connection_state',
    ]) {
      const query = parseListQuery(new URLSearchParams({ sort }), CLIENT_LIST);
      // The grammar over the records in id order: ties keep id order.
      const expected = applyListQuery(directory.sortedById(), query);
      expect(await service.list(query), sort).toEqual(expected);
      expect(await service.list(query), `${sort} (cached)`).toEqual(expected);
    }
  });
});
