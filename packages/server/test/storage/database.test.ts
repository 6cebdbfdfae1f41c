import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test-support/databases.js';
import type { TestDatabase } from '../../../../test-support/databases.js';
import { openDatabase } from '../../src/storage/database.js';
import type { DatabaseSettings } from '../../src/storage/database.js';
import { parseDbHost } from '../../src/storage/dialects.js';

/** A port on 127.0.0.1 where nothing listens. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A server that accepts TCP connections and never says a word. */
async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

const networked = (
  db_type: 'postgres' | 'mysql',
  db_host: string,
  extra: Partial<DatabaseSettings> = {},
) => ({
  db_type,
  db_host,
  db_name: 'svcd',
  db_user: db_type === 'postgres' ? 'postgres' : 'root',
  db_password: '',
  ...extra,
});

describe('openDatabase start-up errors', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svcd-db-errors-'));
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it.each(['postgres', 'mysql'] as const)(
    'names the engine, target and keys when %s is not listening',
    async (engine) => {
      const port = await closedPort();
      await expect(openDatabase(networked(engine, `127.0.0.1:${port}`), { dataDir })).rejects.toThrow(
        `cannot connect to ${engine} database "svcd" at 127.0.0.1:${port} ([database] db_host, db_name, db_user, db_password): connect ECONNREFUSED`,
      );
    },
  );

  it('does not hang on a server that never answers', async () => {
    const silent = await silentServer();
    try {
      const started = Date.now();
      const results = await Promise.allSettled([
        openDatabase(networked('postgres', `127.0.0.1:${silent.port}`), { dataDir }),
        openDatabase(networked('mysql', `127.0.0.1:${silent.port}`), { dataDir }),
      ]);
      expect(Date.now() - started).toBeLessThan(15_000);
      for (const result of results) {
        expect(result.status).toBe('rejected');
        if (result.status === 'rejected')
          expect(String(result.reason)).toMatch(/cannot connect to .*\[database\]/);
      }
    } finally {
      await silent.close();
    }
  });

  it('reports a database that does not exist (postgres)', async () => {
    await expect(
      openDatabase(networked('postgres', '127.0.0.1', { db_name: 'svcd_no_such_database' }), { dataDir }),
    ).rejects.toThrow(
      /cannot connect to postgres database "svcd_no_such_database" at 127.0.0.1:5432 .*does not exist/,
    );
  });

  it('reports refused credentials (mysql)', async () => {
    await expect(
      openDatabase(networked('mysql', '127.0.0.1:3306', { db_user: 'svcd_no_such_user', db_password: 'x' }), {
        dataDir,
      }),
    ).rejects.toThrow(
      /cannot connect to mysql database "svcd" at 127.0.0.1:3306 \(\[database\].*Access denied/,
    );
  });

  it('reports a sqlite file that cannot be opened', async () => {
    const blocker = join(dataDir, 'not-a-directory');
    await writeFile(blocker, 'x');
    await expect(
      openDatabase(
        { db_type: 'sqlite', db_name: join(blocker, 'svcd.db'), db_host: '', db_user: '', db_password: '' },
        { dataDir },
      ),
    ).rejects.toThrow(
      `cannot open sqlite database file "${join(blocker, 'svcd.db')}" ([database] db_name): `,
    );
  });
});

describe('sqlite file', () => {
  let testDb: TestDatabase;
  beforeAll(async () => {
    testDb = await createTestDatabase('sqlite');
  });
  afterAll(async () => {
    await testDb.drop();
  });

  const sqlite = (db_name: string): DatabaseSettings => ({
    db_type: 'sqlite',
    db_name,
    db_host: '',
    db_user: '',
    db_password: '',
  });

  it('defaults to <dataDir>/svcd.db, owner-only, in WAL mode with foreign keys on', async () => {
    const database = await openDatabase(sqlite(''), { dataDir: testDb.dataDir });
    try {
      const file = join(testDb.dataDir, 'svcd.db');
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      const pragma = async (name: string) => {
        const { rows } = await sql<Record<string, unknown>>`pragma ${sql.raw(name)}`.execute(database.db);
        return Object.values(rows[0] ?? {})[0];
      };
      expect(await pragma('journal_mode')).toBe('wal');
      expect(await pragma('foreign_keys')).toBe(1);
      expect(await pragma('busy_timeout')).toBe(5000);
    } finally {
      await database.close();
      await database.close(); // twice is fine
    }
  });

  it('resolves a relative db_name against the data directory and creates missing directories', async () => {
    const database = await openDatabase(sqlite('nested/dir/users.sqlite'), { dataDir: testDb.dataDir });
    await database.close();
    expect((await stat(join(testDb.dataDir, 'nested/dir/users.sqlite'))).isFile()).toBe(true);
  });
});

describe('parseDbHost', () => {
  it('reads host, host:port, [ipv6]:port and socket paths', () => {
    expect(parseDbHost('db.example.com', 5432)).toEqual({ host: 'db.example.com', port: 5432 });
    expect(parseDbHost('10.0.0.5:6543', 5432)).toEqual({ host: '10.0.0.5', port: 6543 });
    expect(parseDbHost('[::1]:3307', 3306)).toEqual({ host: '::1', port: 3307 });
    expect(parseDbHost('::1', 3306)).toEqual({ host: '::1', port: 3306 });
    expect(parseDbHost('', 3306)).toEqual({ host: '127.0.0.1', port: 3306 });
    expect(parseDbHost('socket:/run/mysqld/mysqld.sock', 3306)).toEqual({
      socketPath: '/run/mysqld/mysqld.sock',
    });
    expect(() => parseDbHost('db:99999', 3306)).toThrow(/\[database\] db_host/);
    expect(() => parseDbHost('db:abc', 3306)).toThrow(/\[database\] db_host/);
  });
});
