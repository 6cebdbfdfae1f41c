import { describe, expect, test } from 'vitest';
import { CLIENT_LIST } from '../../src/core/clients/client-list.js';
import { ClientRegistry, type LiveConnection } from '../../src/core/clients/client-registry.js';
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
        Object.assign(row, { connectionState: 'disconnected', disconnectedAt: at });
    return Promise.resolve();
  };
  markDisconnected = (ids: readonly string[], at: number) => {
    for (const id of ids) {
      const row = this.rows.get(id);
      if (row) Object.assign(row, { connectionState: 'disconnected', disconnectedAt: at });
    }
    return Promise.resolve();
  };
  delete = (id: string) => Promise.resolve(this.rows.delete(id));
  deleteDisconnectedBefore = () => Promise.resolve(0);
}

const quiet = { info: () => undefined, warn: () => undefined };
const who = { clientAuthId: 'auth-1', address: '192.0.2.x:1000' };

function connection(sessionId: string): LiveConnection & { closedWith?: string } {
  const c: LiveConnection & { closedWith?: string } = {
    sessionId,
    close: (reason) => void (c.closedWith = reason),
  };
  return c;
}

describe('ClientRegistry', () => {
  test('closeAll closes every connection and stores all of them as disconnected, after their queued writes', async () => {
    const repository = new MemoryRepository();
    let now = new Date('2026-11-24T10:00:00Z');
    const registry = new ClientRegistry(repository, { now: () => now }, quiet);
    const a = connection('sa');
    const b = connection('sb');
    expect(registry.attach(a, makeHello({ client_id: 'a', session_id: 'sa' }), who).ok).toBe(true);
    expect(registry.attach(b, makeHello({ client_id: 'b', session_id: 'sb' }), who).ok).toBe(true);
    now = new Date('2026-11-24T11:00:00Z');
    await registry.closeAll('svcd is shutting down');
    expect([a.closedWith, b.closedWith]).toEqual(['svcd is shutting down', 'svcd is shutting down']);
    for (const id of ['a', 'b']) {
      expect(repository.rows.get(id)).toMatchObject({
        connectionState: 'disconnected',
        disconnectedAt: now.getTime(),
      });
      expect(registry.get(id)).toMatchObject({
        connection_state: 'disconnected',
        disconnected_at: now.toISOString(),
      });
    }
    expect(registry.counts()).toEqual({ connected: 0, disconnected: 2 });
  });

  test('refuses a second session for a connected id, replaces the same session', async () => {
    const repository = new MemoryRepository();
    const registry = new ClientRegistry(repository, { now: () => new Date() }, quiet);
    const first = connection('s1');
    expect(registry.attach(first, makeHello({ client_id: 'x', session_id: 's1' }), who).ok).toBe(true);
    const other = connection('s2');
    expect(registry.attach(other, makeHello({ client_id: 'x', session_id: 's2' }), who)).toEqual({
      ok: false,
      message: "client 'x' is already connected",
    });
    const again = connection('s1');
    expect(registry.attach(again, makeHello({ client_id: 'x', session_id: 's1' }), who).ok).toBe(true);
    expect(first.closedWith).toMatch(/replaced/);
    registry.detach('x', first); // the replaced connection ending changes nothing
    expect(registry.get('x')?.connection_state).toBe('connected');
    expect(registry.countByAuthId('auth-1')).toBe(1);
    registry.detach('x', again);
    expect(registry.get('x')?.connection_state).toBe('disconnected');
    await registry.flush();
    expect(repository.rows.get('x')).toMatchObject({
      connectionState: 'disconnected',
      clientAuthId: 'auth-1',
    });
  });

  test('load marks stored clients disconnected and restores their records', async () => {
    const repository = new MemoryRepository();
    const before = new ClientRegistry(repository, { now: () => new Date() }, quiet);
    before.attach(connection('s'), makeHello({ client_id: 'y', tags: ['t'], labels: { a: 'b' } }), who);
    await before.flush();
    const after = new ClientRegistry(repository, { now: () => new Date('2030-01-01T00:00:00Z') }, quiet);
    await after.load();
    expect(after.get('y')).toEqual({
      ...before.get('y'),
      connection_state: 'disconnected',
      disconnected_at: '2030-01-01T00:00:00.000Z',
    });
  });

  test('disconnectByAuthId closes only that credential’s connections', async () => {
    const registry = new ClientRegistry(new MemoryRepository(), { now: () => new Date() }, quiet);
    const a = connection('a');
    const b = connection('b');
    registry.attach(a, makeHello({ client_id: 'a' }), who);
    registry.attach(b, makeHello({ client_id: 'b' }), { ...who, clientAuthId: 'auth-2' });
    await registry.disconnectByAuthId('auth-2');
    expect([a.closedWith, b.closedWith]).toEqual([undefined, 'its client credential was removed']);
    expect(registry.counts()).toEqual({ connected: 1, disconnected: 1 });
  });
});

describe('ClientsService.list', () => {
  test('orders exactly as the list grammar does on records in id order, for every sort', async () => {
    const registry = new ClientRegistry(new MemoryRepository(), { now: () => new Date() }, quiet);
    const names = ['b', 'B', 'a', 'ä', 'A', 'a ', 'b', '', 'Zed', 'zed'];
    names.forEach((name, i) =>
      registry.attach(
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
    registry.detach('id-x1', registry.connection('id-x1') as LiveConnection);
    const service = new ClientsService(registry);
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
      const expected = applyListQuery(registry.sortedById(), query);
      expect(await service.list(query), sort).toEqual(expected);
      expect(await service.list(query), `${sort} (cached)`).toEqual(expected);
    }
  });
});
