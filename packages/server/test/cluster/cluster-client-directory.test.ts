/**
 * The directory of a cluster node against a real database (SQLite, PostgreSQL): once loaded, a refresh reads
 * only the rows other nodes changed and the ids they deleted, not the whole table; the clients of a node that left
 * are read and marked disconnected; a node joining, and every `fullReadMs`, reads every row.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import { ClusterClientDirectory } from '../../src/cluster/cluster-client-directory.js';
import { LocalClientEvents } from '../../src/core/clients/local-client-events.js';
import type { ClientChanges, StoredClient } from '../../src/core/clients/ports.js';
import { SqlClientRepository } from '../../src/storage/client-repository.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { makeHello } from '../../../../test-support/agent-client.js';

/** Polls `read` every 10 ms until `check` holds, 5 s at most (the directory writes in the background). */
async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline) throw new Error(`not reached: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const log = { info: () => undefined, warn: () => undefined };
const CLIENTS = 1_000;
const HEARTBEAT_MS = 5_000;

/** The repository, counting the rows its readings return. */
class CountingRepository extends SqlClientRepository {
  rowsRead = 0;
  fullReads = 0;

  override async loadAll(): Promise<StoredClient[]> {
    const rows = await super.loadAll();
    this.rowsRead += rows.length;
    this.fullReads += 1;
    return rows;
  }

  override async changedSince(since: number): Promise<ClientChanges> {
    const changes = await super.changedSince(since);
    this.rowsRead += changes.rows.length;
    return changes;
  }

  override async heldBy(nodeIds: readonly string[]): Promise<StoredClient[]> {
    const rows = await super.heldBy(nodeIds);
    this.rowsRead += rows.length;
    return rows;
  }
}

const heldBy = (id: string, nodeId: string, epoch = 1): StoredClient => ({
  id,
  clientAuthId: 'auth',
  connectionState: 'connected',
  disconnectedAt: null,
  owner: { nodeId, epoch },
  details: { name: id },
});

/** node-a's directory over `rows`, reading the clock and the live nodes from what the test moves. */
const nodeA = (rows: SqlClientRepository, now: () => number, live: () => ReadonlySet<string>) =>
  new ClusterClientDirectory(rows, new LocalClientEvents(), 'node-a', { now: () => new Date(now()) }, log, {
    liveNodes: () => Promise.resolve(live()),
    fullReadMs: 60 * HEARTBEAT_MS,
    overlapMs: 2 * HEARTBEAT_MS,
  });

describe.each(['sqlite', 'postgres'] as const)('cluster client directory on %s', (engine) => {
  let testDb: TestDatabase;
  let database: Database;

  beforeAll(async () => {
    testDb = await createTestDatabase(engine);
    database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
  });
  afterAll(async () => {
    await database?.close();
    await testDb?.drop();
  });

  test('a refresh reads only what other nodes changed and the rows of a node leaving; a node joining, and the slow cadence, read every row', async () => {
    // One clock for the writers' stamps and the reading node: the test moves it heartbeat by heartbeat.
    let now = Date.UTC(2031, 0, 1);
    let live: ReadonlySet<string> = new Set(['node-a', 'node-b', 'node-c']);
    const rows = new CountingRepository(database, () => now);
    const directory = nodeA(
      rows,
      () => now,
      () => live,
    );
    const lost: [string, number][] = [];
    directory.onNodeLost = (nodeId, ids) => lost.push([nodeId, ids.length]);
    // node-b's writes, as its own directory makes them.
    const nodeB = new SqlClientRepository(database, () => now);
    for (let n = 0; n < CLIENTS; n += 1) await nodeB.save(heldBy(`c-${n}`, 'node-b'));
    const heartbeat = async (): Promise<number> => {
      now += HEARTBEAT_MS;
      const before = rows.rowsRead;
      await directory.refresh();
      return rows.rowsRead - before;
    };
    /** Heartbeats until one reads no row: rows written lately are read again within the overlap. */
    const settle = async (): Promise<void> => {
      for (let beat = 0; beat < 5; beat += 1) if ((await heartbeat()) === 0) return;
      throw new Error('still reading changed rows after five heartbeats');
    };

    await directory.load();
    expect(rows.rowsRead).toBe(CLIENTS);
    expect(directory.counts()).toEqual({ connected: CLIENTS, disconnected: 0 });
    // The rows written just before the load are read again within the overlap, then nothing while nothing changes.
    await settle();
    for (let beat = 0; beat < 5; beat += 1) expect(await heartbeat()).toBe(0);
    expect(rows.fullReads).toBe(1);

    // node-b's agent c-1 disconnects, c-2 moves to node-c, and c-3 (disconnected long ago) is deleted.
    await nodeB.save(
      { ...heldBy('c-1', 'node-b'), connectionState: 'disconnected', disconnectedAt: now, owner: null },
      { nodeId: 'node-b', epoch: 1 },
    );
    await nodeB.save(heldBy('c-2', 'node-c', 2));
    await nodeB.markDisconnected(['c-3'], now, 'node-b');
    expect(await heartbeat()).toBe(3);
    expect(directory.get('c-1')?.connection_state).toBe('disconnected');
    expect(directory.owner('c-2')).toEqual({ nodeId: 'node-c', epoch: 2 });
    expect(await nodeB.delete('c-3')).toBe(true);
    await heartbeat();
    expect(directory.get('c-3')).toBeUndefined();
    expect(directory.counts()).toEqual({ connected: CLIENTS - 2, disconnected: 1 });
    await settle();
    expect(rows.fullReads).toBe(1);

    // node-b leaves: only the rows it holds are read, and marked disconnected; the one node-c holds stays.
    live = new Set(['node-a', 'node-c']);
    expect(await heartbeat()).toBe(CLIENTS - 3);
    expect(rows.fullReads).toBe(1);
    expect(lost).toEqual([['node-b', CLIENTS - 3]]);
    expect(directory.counts()).toEqual({ connected: 1, disconnected: CLIENTS - 2 });
    expect(directory.owner('c-2')).toEqual({ nodeId: 'node-c', epoch: 2 });
    const stored = await new SqlClientRepository(database).loadAll();
    expect(stored.filter((row) => row.connectionState === 'connected').map((row) => row.id)).toEqual(['c-2']);

    // Steady again (the rows this node marked are read once more within the overlap), until the slow cadence.
    await settle();
    // A node joining is read in full: whatever it wrote before it was live.
    live = new Set(['node-a', 'node-c', 'node-d']);
    await heartbeat();
    expect(rows.fullReads).toBe(2);
    await settle();
    const fullBefore = rows.fullReads;
    for (let beat = 0; beat < 70 && rows.fullReads === fullBefore; beat += 1) await heartbeat();
    expect(rows.fullReads).toBe(fullBefore + 1);
  });

  test('a client this node holds that another node marked disconnected (it took this one for gone) is written again', async () => {
    let now = Date.UTC(2033, 0, 1);
    const rows = new SqlClientRepository(database, () => now);
    const directory = nodeA(
      rows,
      () => now,
      () => new Set(['node-a', 'node-b']),
    );
    await directory.load();
    const { owner } = directory.attach(makeHello({ client_id: 'kept', session_id: 's-kept' }), {
      clientAuthId: 'auth',
      address: '192.0.2.x:1000',
    });
    const stored = async () =>
      (await new SqlClientRepository(database).loadAll()).find((r) => r.id === 'kept');
    await eventually(stored, (row) => row?.connectionState === 'connected');
    // node-b's heartbeats missed node-a for three beats: it marks node-a's clients disconnected.
    now += HEARTBEAT_MS;
    await new SqlClientRepository(database, () => now).markDisconnected(['kept'], now, 'node-a');
    expect(await stored()).toMatchObject({ connectionState: 'disconnected', owner: null });
    now += HEARTBEAT_MS;
    await directory.refresh();
    await eventually(stored, (row) => row?.connectionState === 'connected');
    expect((await stored())?.owner).toEqual(owner);
    expect(directory.get('kept')).toMatchObject({ connection_state: 'connected' });
    // Gone again, and its row with it (the tests share the database).
    directory.detach('kept', owner.epoch);
    await eventually(stored, (row) => row?.connectionState === 'disconnected');
    expect(await rows.delete('kept')).toBe(true);
  });

  test('a client another node now holds is listed connected there since its epoch; older news change nothing', async () => {
    let now = Date.UTC(2032, 0, 1);
    let live: ReadonlySet<string> = new Set(['node-a', 'node-b', 'node-c']);
    const rows = new SqlClientRepository(database, () => now);
    const directory = nodeA(
      rows,
      () => now,
      () => live,
    );
    const lost: [string, string[]][] = [];
    directory.onNodeLost = (nodeId, ids) => lost.push([nodeId, ids]);
    await rows.save(heldBy('roamer', 'node-c', 1));
    await rows.save(heldBy('stayer', 'node-c', 1));
    await directory.load();
    expect(directory.get('roamer')).toMatchObject({ connection_state: 'connected' });

    // node-c dies; its agent 'roamer' reaches node-b, whose claim presence shows before node-b's row is read.
    const epoch = now + 1_000;
    directory.movedTo('roamer', { nodeId: 'node-b', epoch });
    expect(directory.get('roamer')).toMatchObject({
      connection_state: 'connected',
      connected_at: new Date(epoch).toISOString(),
      disconnected_at: null,
    });
    expect(directory.owner('roamer')).toEqual({ nodeId: 'node-b', epoch });
    // An older connection's news, or the same again, do not move it back.
    const version = directory.version;
    directory.movedTo('roamer', { nodeId: 'node-b', epoch });
    directory.movedTo('roamer', { nodeId: 'node-b', epoch: epoch - 1 });
    expect(directory.version).toBe(version);

    // node-c's presence expires: its clients still stored as its own are marked disconnected, not 'roamer'.
    now += HEARTBEAT_MS;
    live = new Set(['node-a', 'node-b']);
    await directory.refresh();
    // (node-c's clients of the test before are in this database too.)
    expect(lost.map(([node, ids]) => [node, ids.filter((id) => id === 'stayer' || id === 'roamer')])).toEqual(
      [['node-c', ['stayer']]],
    );
    expect(directory.get('stayer')).toMatchObject({ connection_state: 'disconnected' });
    expect(directory.get('roamer')).toMatchObject({ connection_state: 'connected' });
    expect(directory.owner('roamer')).toEqual({ nodeId: 'node-b', epoch });

    // The row node-b writes is taken in at the next refresh.
    now += HEARTBEAT_MS;
    await rows.save({ ...heldBy('roamer', 'node-b', epoch), details: { name: 'roamer', version: 'new' } });
    await directory.refresh();
    expect(directory.owner('roamer')).toEqual({ nodeId: 'node-b', epoch });
    expect(directory.get('roamer')).toMatchObject({ connection_state: 'connected' });
    // A later disconnect on node-b (its row without an owner) is taken in too.
    now += HEARTBEAT_MS;
    await rows.save({
      ...heldBy('roamer', 'node-b', epoch),
      connectionState: 'disconnected',
      owner: null,
      disconnectedAt: now,
    });
    await directory.refresh();
    expect(directory.get('roamer')).toMatchObject({ connection_state: 'disconnected' });
  });
});
