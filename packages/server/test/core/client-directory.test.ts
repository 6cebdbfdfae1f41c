/**
 * The single-node client directory (core/clients/cached-client-directory.ts) over a real SQLite database: records
 * and their persistence, the owner node and epoch of connected clients, and the events it publishes.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { makeHello } from '../../../../test-support/agent-client.js';
import { createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import { CachedClientDirectory } from '../../src/core/clients/cached-client-directory.js';
import type { ClientTunnel } from '../../src/core/clients/client-record.js';
import type { ClientEventMap } from '../../src/core/clients/client-events.js';
import { LocalClientEvents } from '../../src/core/clients/local-client-events.js';
import { SqlClientRepository } from '../../src/storage/client-repository.js';
import { openDatabase, type Database } from '../../src/storage/database.js';

const quiet = { info: () => undefined, warn: () => undefined };
const who = { clientAuthId: 'auth-1', address: '192.0.2.x:1000' };

let testDb: TestDatabase;
let database: Database;
let now: Date;

beforeEach(async () => {
  testDb = await createTestDatabase('sqlite');
  database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
  now = new Date('2030-01-01T00:00:00Z');
});
afterEach(async () => {
  await database.close();
  await testDb.drop();
});

/** A directory on the shared database, with every event it publishes logged as `type id`. */
async function directoryOf(nodeId = 'node-1', repository = new SqlClientRepository(database)) {
  const events = new LocalClientEvents();
  const log: string[] = [];
  const note =
    <T extends keyof ClientEventMap>(type: T) =>
    (event: ClientEventMap[T]) =>
      log.push(`${type} ${'clientId' in event ? event.clientId : ''}`.trim());
  for (const type of ['attached', 'detached', 'removed', 'recordChanged', 'recordsReloaded'] as const)
    events.subscribe(type, note(type));
  const directory = new CachedClientDirectory(repository, events, nodeId, { now: () => now }, quiet);
  await directory.load();
  log.length = 0;
  return { directory, events, log };
}

describe('CachedClientDirectory', () => {
  test('attach stores a connected record owned by this node with a new, increasing epoch each time', async () => {
    const { directory, log } = await directoryOf('node-1');
    const first = directory.attach(makeHello({ client_id: 'a', session_id: 's1' }), who);
    expect(first.owner.nodeId).toBe('node-1');
    expect(first.record).toMatchObject({ id: 'a', connection_state: 'connected', client_auth_id: 'auth-1' });
    expect(directory.owner('a')).toEqual(first.owner);
    const second = directory.attach(makeHello({ client_id: 'b' }), who);
    // The clock stands still: the epoch still grows.
    const third = directory.attach(makeHello({ client_id: 'a', session_id: 's1' }), who);
    expect(second.owner.epoch).toBeGreaterThan(first.owner.epoch);
    expect(third.owner.epoch).toBeGreaterThan(second.owner.epoch);
    expect(directory.counts()).toEqual({ connected: 2, disconnected: 0 });
    expect(log).toEqual([
      'recordChanged a',
      'attached a',
      'recordChanged b',
      'attached b',
      'recordChanged a',
      'attached a',
    ]);
    await directory.flush();
    const rows = await new SqlClientRepository(database).loadAll();
    expect(rows.map((r) => [r.id, r.connectionState, r.owner])).toEqual([
      ['a', 'connected', third.owner],
      ['b', 'connected', second.owner],
    ]);
    directory.detach('a', third.owner.epoch);
    await directory.flush();
    const [a] = await new SqlClientRepository(database).loadAll();
    expect(a).toMatchObject({ id: 'a', connectionState: 'disconnected', owner: null });
  });

  test('detach of an older epoch changes nothing; of the current one marks the client disconnected', async () => {
    const { directory, log } = await directoryOf();
    const old = directory.attach(makeHello({ client_id: 'a' }), who);
    const current = directory.attach(makeHello({ client_id: 'a' }), who);
    log.length = 0;
    directory.detach('a', old.owner.epoch);
    expect(directory.get('a')?.connection_state).toBe('connected');
    expect(log).toEqual([]);
    expect(
      directory.updateFacts('a', old.owner.epoch, { tags: ['x'], labels: {}, facts: makeHello().facts }),
    ).toBe(false);
    now = new Date('2030-01-01T01:00:00Z');
    directory.detach('a', current.owner.epoch);
    expect(directory.get('a')).toMatchObject({
      connection_state: 'disconnected',
      disconnected_at: now.toISOString(),
      tunnels: [],
    });
    expect(directory.owner('a')).toBeUndefined();
    expect(directory.counts()).toEqual({ connected: 0, disconnected: 1 });
    expect(log).toEqual(['recordChanged a', 'detached a']);
  });

  test('counts and credential counts follow every change; only disconnected clients can be deleted', async () => {
    const { directory, log } = await directoryOf();
    const a = directory.attach(makeHello({ client_id: 'a' }), who);
    directory.attach(makeHello({ client_id: 'b' }), { ...who, clientAuthId: 'auth-2' });
    expect(directory.countByCredential('auth-1')).toBe(1);
    await expect(directory.delete('a')).rejects.toMatchObject({ code: 'ERR_CLIENT_CONNECTED' });
    await expect(directory.delete('nope')).rejects.toMatchObject({ code: 'ERR_CLIENT_NOT_FOUND' });
    directory.detach('a', a.owner.epoch);
    expect(directory.countByCredential('auth-1')).toBe(0);
    log.length = 0;
    await directory.delete('a');
    expect(log).toEqual(['recordChanged a', 'removed a']);
    expect(directory.get('a')).toBeUndefined();
    expect(directory.idsInOrder()).toEqual(['b']);
    expect(directory.counts()).toEqual({ connected: 1, disconnected: 0 });
  });

  test('start-up (load) marks every stored client disconnected and tells derived views to rebuild', async () => {
    const before = await directoryOf();
    before.directory.attach(makeHello({ client_id: 'a' }), who);
    before.directory.attach(makeHello({ client_id: 'b' }), who);
    await before.directory.flush();
    now = new Date('2030-01-02T00:00:00Z');
    const events = new LocalClientEvents();
    let reloads = 0;
    events.subscribe('recordsReloaded', () => (reloads += 1));
    const after = new CachedClientDirectory(
      new SqlClientRepository(database),
      events,
      'node-1',
      { now: () => now },
      quiet,
    );
    await after.load();
    expect(reloads).toBe(1);
    expect(after.counts()).toEqual({ connected: 0, disconnected: 2 });
    expect(after.get('a')?.disconnected_at).toBe(now.toISOString());
    expect(after.owner('a')).toBeUndefined();
  });

  test('storeDisconnected writes a batch of clients detached without their own save', async () => {
    const { directory } = await directoryOf();
    const a = directory.attach(makeHello({ client_id: 'a' }), who);
    const b = directory.attach(makeHello({ client_id: 'b' }), who);
    now = new Date('2030-01-01T02:00:00Z');
    directory.detach('a', a.owner.epoch, { at: now, save: false });
    directory.detach('b', b.owner.epoch, { at: now, save: false });
    await directory.storeDisconnected(['a', 'b'], now);
    const rows = await new SqlClientRepository(database).loadAll();
    expect(rows.map((r) => [r.id, r.connectionState, r.disconnectedAt])).toEqual([
      ['a', 'disconnected', now.getTime()],
      ['b', 'disconnected', now.getTime()],
    ]);
  });

  test('tunnels set again unchanged write nothing and change nothing; changed ones are stored', async () => {
    let saves = 0;
    class CountingRepository extends SqlClientRepository {
      override save(...args: Parameters<SqlClientRepository['save']>): Promise<void> {
        saves += 1;
        return super.save(...args);
      }
    }
    const { directory, log } = await directoryOf('node-1', new CountingRepository(database));
    const changed = () =>
      log.filter((line) => line.startsWith('recordChanged')).map((line) => line.split(' ')[1]);
    directory.attach(makeHello({ client_id: 'a' }), who);
    await directory.flush();
    expect([saves, changed()]).toEqual([1, ['a']]);
    // What every connection ends with: its (no) tunnels re-opened.
    directory.setTunnels('a', []);
    await directory.flush();
    expect([saves, changed()]).toEqual([1, ['a']]);
    const tunnel: ClientTunnel = {
      id: '1',
      lhost: '0.0.0.0',
      lport: '20000',
      rhost: '127.0.0.1',
      rport: '22',
      scheme: null,
      acl: null,
      idle_timeout_minutes: 5,
      auto_close: null,
      tunnel_url: null,
      created_at: now.toISOString(),
    };
    directory.setTunnels('a', [tunnel]);
    directory.setTunnels('a', [{ ...tunnel }]);
    await directory.flush();
    expect([saves, changed()]).toEqual([2, ['a', 'a']]);
    expect(directory.get('a')?.tunnels).toEqual([tunnel]);
    const [row] = await new SqlClientRepository(database).loadAll();
    expect(row?.details).toMatchObject({ tunnels: [tunnel] });
  });
});
