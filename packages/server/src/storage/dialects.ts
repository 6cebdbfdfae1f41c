import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { MysqlDialect, PostgresDialect, SqliteDialect } from 'kysely';
import { cachingStatements } from './sqlite-statement-cache.js';
import type { Dialect } from 'kysely';
import mysql from 'mysql2';
import pg from 'pg';
import type { DatabaseSettings } from './database.js';

/** Connect and lock timeouts: a dead or silent server fails the start instead of hanging it. */
export const CONNECT_TIMEOUT_MS = 5_000;
const POOL_SIZE = 10;

/** How to reach one configured database, and how to name it in a start-up error. */
export interface DialectPlan {
  /** e.g. `postgres database "svcd" at 127.0.0.1:5432 ([database] db_host, db_name, db_user, db_password)` */
  readonly description: string;
  create(): Dialect;
}

type Endpoint = { host: string; port: number } | { socketPath: string };

/**
 * Parses `[database] db_host`: `host`, `host:port`, `[ipv6]:port`, a bare IPv6 address, or `socket:/path`
 * (MySQL: the socket file; PostgreSQL: the directory holding the socket). Empty means 127.0.0.1.
 */
export function parseDbHost(value: string, defaultPort: number): Endpoint {
  const text = value.trim();
  if (text.startsWith('socket:')) return { socketPath: text.slice('socket:'.length) };
  if (text === '') return { host: '127.0.0.1', port: defaultPort };
  const match = /^\[([^\]]+)\](?::(.*))?$/.exec(text) ?? /^([^:]+)(?::(.*))?$/.exec(text);
  if (!match) return { host: text, port: defaultPort }; // a bare IPv6 address
  const host = match[1] ?? '';
  const portText = match[2];
  if (portText === undefined) return { host, port: defaultPort };
  const port = /^\d{1,5}$/.test(portText) ? Number(portText) : NaN;
  if (!(port >= 1 && port <= 65535)) {
    throw new Error(`[database] db_host "${value}": the port must be a number from 1 to 65535`);
  }
  return { host, port };
}

const endpointText = (endpoint: Endpoint): string =>
  'socketPath' in endpoint
    ? `socket ${endpoint.socketPath}`
    : endpoint.host.includes(':')
      ? `[${endpoint.host}]:${endpoint.port}`
      : `${endpoint.host}:${endpoint.port}`;

const NETWORK_KEYS = '([database] db_host, db_name, db_user, db_password)';

/** The sqlite file: absolute, or relative to the data directory; empty means `<dataDir>/svcd.db`. */
export function sqliteFile(dbName: string, dataDir: string): string {
  if (dbName === ':memory:') return dbName;
  return resolve(dataDir, dbName.trim() === '' ? 'svcd.db' : dbName);
}

/**
 * Opens a SQLite file in WAL mode. `synchronous` NORMAL: a commit survives a crash of svcd (kill -9) but a power
 * cut may lose the last ones; FULL also syncs the WAL at each commit, so a power cut loses nothing acknowledged.
 */
export function openSqliteFile(file: string, synchronous: 'NORMAL' | 'FULL' = 'NORMAL'): SQLite.Database {
  if (file !== ':memory:') {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    // Create the file owner-only before SQLite does (SQLite gives -wal/-shm files the same mode).
    if (!existsSync(file)) closeSync(openSync(file, 'a', 0o600));
  }
  const db = new SQLite(file, { timeout: CONNECT_TIMEOUT_MS });
  try {
    db.pragma('journal_mode = WAL');
    // In WAL mode NORMAL cannot corrupt the database; a power cut may lose the last commits, and it saves an
    // fsync on the event loop for every write (a login writes its session row).
    db.pragma(`synchronous = ${synchronous}`);
    db.pragma('foreign_keys = ON');
    db.pragma(`busy_timeout = ${CONNECT_TIMEOUT_MS}`);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

function postgresPool(settings: DatabaseSettings, endpoint: Endpoint): pg.Pool {
  const pool = new pg.Pool({
    ...('socketPath' in endpoint ? { host: endpoint.socketPath } : endpoint),
    user: settings.db_user || undefined,
    password: settings.db_password,
    database: settings.db_name || undefined,
    max: POOL_SIZE,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
  });
  // When the server goes away, pg emits 'error' on the pool (idle clients) and on checked-out clients even
  // though the running query is also rejected with it; an 'error' event without a listener would crash the
  // process. The query's own rejection is what callers see (as `unavailable`); the pool drops dead clients.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

function mysqlPool(settings: DatabaseSettings, endpoint: Endpoint): mysql.Pool {
  return mysql.createPool({
    ...endpoint,
    user: settings.db_user || undefined,
    password: settings.db_password,
    database: settings.db_name || undefined,
    connectionLimit: POOL_SIZE,
    connectTimeout: CONNECT_TIMEOUT_MS,
    enableKeepAlive: true,
    charset: 'utf8mb4_general_ci',
  });
}

export function planDialect(settings: DatabaseSettings, dataDir: string): DialectPlan {
  const engine = settings.db_type;
  switch (engine) {
    case 'sqlite': {
      const file = sqliteFile(settings.db_name, dataDir);
      return {
        description: `sqlite database file "${file}" ([database] db_name)`,
        create: () => new SqliteDialect({ database: cachingStatements(openSqliteFile(file)) }),
      };
    }
    case 'postgres': {
      const endpoint = parseDbHost(settings.db_host, 5432);
      return {
        description: `postgres database "${settings.db_name}" at ${endpointText(endpoint)} ${NETWORK_KEYS}`,
        create: () => new PostgresDialect({ pool: postgresPool(settings, endpoint) }),
      };
    }
    case 'mysql': {
      const endpoint = parseDbHost(settings.db_host, 3306);
      return {
        description: `mysql database "${settings.db_name}" at ${endpointText(endpoint)} ${NETWORK_KEYS}`,
        create: () => new MysqlDialect({ pool: mysqlPool(settings, endpoint) }),
      };
    }
    default: {
      const unknown: never = engine;
      throw new Error(
        `[database] db_type "${String(unknown)}" is not supported: use sqlite, postgres or mysql`,
      );
    }
  }
}
