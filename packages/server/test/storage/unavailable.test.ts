import { createConnection, createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { AppError, ERROR_CODES } from '@svc/protocol';
import SQLite from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, MYSQL_PORT, POSTGRES_PORT } from '../../../../test-support/databases.js';
import type { TestDatabase } from '../../../../test-support/databases.js';
import { openDatabase } from '../../src/storage/database.js';
import type { Database } from '../../src/storage/database.js';
import { DatabaseUserStore } from '../../src/storage/database-user-store.js';
import { SqlSessionStore } from '../../src/storage/session-store.js';

/** A TCP relay to a real database server; `kill()` drops every connection and stops listening. */
async function startRelay(targetPort: number): Promise<{ port: number; kill(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
    track(client);
    track(upstream);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    kill: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

const expectUnavailable = async (promise: Promise<unknown>): Promise<void> => {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  expect(err).toMatchObject({ kind: 'unavailable', code: ERROR_CODES.storageUnavailable });
  expect((err as AppError).detail).not.toBe('');
};

const NAMES = { userTable: 'users', groupTable: 'groups' };
const SESSION = {
  id: 'sid',
  username: 'alice',
  createdAt: new Date('2030-01-01T00:00:00Z'),
  expiresAt: new Date('2031-01-01T00:00:00Z'),
};

describe('a database that goes away while serving', () => {
  let testDb: TestDatabase | undefined;
  let database: Database | undefined;

  afterEach(async () => {
    await database?.close();
    await testDb?.drop();
    database = undefined;
    testDb = undefined;
  });

  it.each([
    ['postgres', POSTGRES_PORT],
    ['mysql', MYSQL_PORT],
  ] as const)('%s: stores answer unavailable once the server cannot be reached', async (engine, port) => {
    testDb = await createTestDatabase(engine);
    const relay = await startRelay(port);
    database = await openDatabase(
      { ...testDb.settings, db_host: `127.0.0.1:${relay.port}` },
      { dataDir: testDb.dataDir },
    );
    const users = await DatabaseUserStore.open(database, NAMES);
    const sessions = new SqlSessionStore(database);
    await users.create({ username: 'alice', passwordHash: 'h', groups: ['Administrators'] });
    await sessions.create(SESSION);

    await relay.kill();

    // Open pool connections are cut, new ones are refused: reads, writes and transactions all fail as 503.
    await expectUnavailable(sessions.isActive('sid', SESSION.createdAt));
    await expectUnavailable(users.list());
    await expectUnavailable(users.find('alice'));
    await expectUnavailable(users.create({ username: 'bob', passwordHash: 'h', groups: ['a'] }));
    await expectUnavailable(users.update('alice', { groups: [] }));
    await expectUnavailable(sessions.purgeExpired(SESSION.expiresAt));
  });

  it('sqlite: a write blocked by another process past busy_timeout answers unavailable', async () => {
    testDb = await createTestDatabase('sqlite');
    database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
    const users = await DatabaseUserStore.open(database, NAMES);
    const sessions = new SqlSessionStore(database);
    await users.create({ username: 'alice', passwordHash: 'h', groups: [] });

    const other = new SQLite(join(testDb.dataDir, 'svcd.db'));
    try {
      other.exec('BEGIN EXCLUSIVE');
      const started = Date.now();
      await expectUnavailable(sessions.create(SESSION));
      expect(Date.now() - started).toBeGreaterThanOrEqual(4_500);
      // WAL readers are not blocked
      expect((await users.find('alice'))?.username).toBe('alice');
      other.exec('ROLLBACK');
      await sessions.create(SESSION);
      expect(await sessions.isActive('sid', SESSION.createdAt)).toBe(true);
    } finally {
      other.close();
    }
  });
});
