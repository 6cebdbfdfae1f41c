import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { DatabaseSettings, DbEngine } from '../packages/server/src/storage/database.js';

export const ALL_ENGINES: DbEngine[] = ['sqlite', 'postgres', 'mysql'];

export const POSTGRES_HOST = '127.0.0.1';
export const POSTGRES_PORT = 5432;
export const MYSQL_HOST = '127.0.0.1';
export const MYSQL_PORT = 3306;

export interface TestDatabase {
  settings: DatabaseSettings;
  dataDir: string;
  /** Drops the database (PostgreSQL/MariaDB) and removes the data directory. */
  drop(): Promise<void>;
}

const uniqueName = (): string => `svcd_test_${randomBytes(6).toString('hex')}`;

const reason = (err: unknown): string =>
  err instanceof AggregateError
    ? err.errors.map(reason).join('; ')
    : err instanceof Error
      ? err.message || String((err as { code?: unknown }).code)
      : String(err);

/** Superuser connection settings for the local PostgreSQL: user `postgres`, else `root` (trust auth). */
export async function postgresAdmin(): Promise<pg.ClientConfig> {
  const failures: string[] = [];
  for (const user of ['postgres', 'root']) {
    const config: pg.ClientConfig = {
      host: POSTGRES_HOST,
      port: POSTGRES_PORT,
      user,
      database: 'postgres',
      connectionTimeoutMillis: 5_000,
    };
    const client = new pg.Client(config);
    try {
      await client.connect();
      return config;
    } catch (err) {
      failures.push(`as ${user}: ${reason(err)}`);
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  throw new Error(
    `PostgreSQL at ${POSTGRES_HOST}:${POSTGRES_PORT} is required for these tests: ${failures.join('; ')}`,
  );
}

/** Runs one statement as the PostgreSQL superuser. */
export async function postgresAdminQuery(text: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client(await postgresAdmin());
  await client.connect();
  try {
    return await client.query(text, values);
  } finally {
    await client.end();
  }
}

/** Runs one statement as the MariaDB/MySQL root user. */
export async function mysqlAdminQuery(text: string, values: unknown[] = []): Promise<unknown> {
  let connection: mysql.Connection;
  try {
    connection = await mysql.createConnection({
      host: MYSQL_HOST,
      port: MYSQL_PORT,
      user: 'root',
      password: '',
      connectTimeout: 5_000,
    });
  } catch (err) {
    throw new Error(
      `MariaDB/MySQL at ${MYSQL_HOST}:${MYSQL_PORT} is required for these tests: ${reason(err)}`,
      {
        cause: err,
      },
    );
  }
  try {
    const [result] = await connection.query(text, values);
    return result;
  } finally {
    await connection.end();
  }
}

/**
 * A fresh, empty database of the given engine: a temp directory for SQLite, a new database named
 * `svcd_test_<random>` on the local PostgreSQL or MariaDB. Throws (never skips) when the server is down.
 */
export async function createTestDatabase(engine: DbEngine): Promise<TestDatabase> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svcd-db-'));
  const removeDir = () => rm(dataDir, { recursive: true, force: true });
  try {
    switch (engine) {
      case 'sqlite':
        return {
          settings: { db_type: 'sqlite', db_name: 'svcd.db', db_host: '', db_user: '', db_password: '' },
          dataDir,
          drop: removeDir,
        };
      case 'postgres': {
        const admin = await postgresAdmin();
        const name = uniqueName();
        await postgresAdminQuery(`CREATE DATABASE ${name}`);
        return {
          settings: {
            db_type: 'postgres',
            db_name: name,
            db_host: `${POSTGRES_HOST}:${POSTGRES_PORT}`,
            db_user: admin.user ?? 'postgres',
            db_password: '',
          },
          dataDir,
          drop: async () => {
            await postgresAdminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
            await removeDir();
          },
        };
      }
      case 'mysql': {
        const name = uniqueName();
        await mysqlAdminQuery(`CREATE DATABASE ${name}`);
        return {
          settings: {
            db_type: 'mysql',
            db_name: name,
            db_host: `${MYSQL_HOST}:${MYSQL_PORT}`,
            db_user: 'root',
            db_password: '',
          },
          dataDir,
          drop: async () => {
            await mysqlAdminQuery(`DROP DATABASE IF EXISTS ${name}`);
            await removeDir();
          },
        };
      }
    }
  } catch (err) {
    await removeDir();
    throw err;
  }
}
