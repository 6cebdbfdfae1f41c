import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hash } from '@node-rs/bcrypt';
import { pino, type Logger } from 'pino';
import { svcdConfigSchema, type SvcdConfig } from '../packages/server/src/config/schema.js';
import { startServer, type RunningServer, type ServerOptions } from '../packages/server/src/server.js';
import { resolveConfigPaths } from '../packages/server/src/cli/resolve-paths.js';
import { openDatabase, type DbEngine } from '../packages/server/src/storage/database.js';
import { DatabaseUserStore } from '../packages/server/src/storage/database-user-store.js';
import { TableClientAuthStore } from '../packages/server/src/storage/table-client-auth-store.js';
import { ensureUserTables } from '../packages/server/src/storage/user-tables.js';
import { createApiClient, type ApiClient } from './api-client.js';
import { createTestDatabase } from './databases.js';

export type StoreKind = 'static' | 'file' | `database:${DbEngine}`;
export const ALL_STORES: StoreKind[] = [
  'static',
  'file',
  'database:sqlite',
  'database:postgres',
  'database:mysql',
];
export const WRITABLE_STORES: StoreKind[] = [
  'file',
  'database:sqlite',
  'database:postgres',
  'database:mysql',
];

export interface SeedUser {
  username: string;
  password: string;
  groups: string[];
  twoFaSendTo?: string;
}

export const ADMIN: SeedUser = { username: 'admin', password: 'admin-secret-1', groups: ['Administrators'] };
export const OPERATOR: SeedUser = {
  username: 'operator',
  password: 'operator-secret-1',
  groups: ['Operators'],
};

export interface TestServer {
  readonly server: RunningServer;
  readonly api: ApiClient;
  config: SvcdConfig;
  dataDir: string;
  store: StoreKind;
  /** Path of the user file for the file store. */
  userFile?: string;
  /** Stops svcd and starts it again on the same data and database (the API port changes). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Cheap scrypt parameters for tests; one test elsewhere uses the production ones. */
export const TEST_VAULT_KDF = { algorithm: 'scrypt', N: 1024, r: 8, p: 1 } as const;

export interface TestServerOptions {
  store: StoreKind;
  users?: SeedUser[];
  /** Raw `[api]` keys merged over the defaults used here. */
  api?: Record<string, unknown>;
  server?: Record<string, unknown>;
  /** Further sections, e.g. `smtp` or `pushover`. */
  sections?: Record<string, Record<string, unknown>>;
  /** The client credential source and what it holds at start. */
  clientAuth?: { source: 'static' | 'file' | 'table'; entries: Record<string, string> };
  /** Settings that are not configuration keys (e.g. a shorter tunnel idle minute). */
  tuning?: ServerOptions;
  /** Where svcd logs; silent by default. */
  logger?: Logger;
}

/** bcrypt cost 4 keeps seeding fast; svcd itself hashes at cost 10. */
const seedHash = (password: string) => hash(password, { cost: 4 });

/** Starts a real svcd in this process on free loopback ports, with the chosen user store and seeded users. */
export async function startTestServer(options: TestServerOptions): Promise<TestServer> {
  const users = options.users ?? [ADMIN, OPERATOR];
  const dataDir = await mkdtemp(join(tmpdir(), 'svcd-test-'));
  const cleanups: (() => Promise<void>)[] = [() => rm(dataDir, { recursive: true, force: true })];
  const api: Record<string, unknown> = { address: '127.0.0.1:0', user_login_wait: 0, ...options.api };
  let database: Record<string, unknown> = { db_type: 'sqlite' };
  let userFile: string | undefined;

  if (options.store === 'static') {
    const [first] = users;
    if (!first) throw new Error('static store needs one user');
    api.auth = `${first.username}:${first.password}`;
  } else if (options.store === 'file') {
    userFile = join(dataDir, 'users.json');
    const entries = await Promise.all(
      users.map(async (u) => ({
        username: u.username,
        password: await seedHash(u.password),
        groups: u.groups,
        ...(u.twoFaSendTo === undefined ? {} : { two_fa_send_to: u.twoFaSendTo }),
      })),
    );
    await writeFile(userFile, JSON.stringify(entries), { mode: 0o600 });
    api.auth_file = userFile;
  } else {
    const engine = options.store.slice('database:'.length) as DbEngine;
    const db = await createTestDatabase(engine);
    cleanups.push(() => db.drop());
    database = { ...db.settings };
    api.auth_user_table = 'users';
    api.auth_group_table = 'groups';
    await seedDatabaseUsers(database, dataDir, users);
  }

  const server: Record<string, unknown> = { address: '127.0.0.1:0', data_dir: dataDir, ...options.server };
  if (options.clientAuth) await seedClientAuth(options.clientAuth, server, database, dataDir);

  // A given logger's level is also svcd's [logging] log_level (debug turns on the per-request lines).
  const logging = options.logger ? { log_level: options.logger.level } : {};
  const raw = { server, api, database, logging, ...options.sections };
  const config = resolveConfigPaths(svcdConfigSchema.parse(raw), join(dataDir, 'svcd.conf'));
  const logger = options.logger ?? pino({ level: 'silent' });
  const tuning: ServerOptions = { vaultKdf: TEST_VAULT_KDF, ...options.tuning };
  const start = async () => {
    const started = await startServer(config, logger, tuning);
    if (!started.apiUrl) throw new Error('test server has no API');
    return { running: started, api: createApiClient(started.apiUrl) };
  };
  let current = await start();
  return {
    get server() {
      return current.running;
    },
    get api() {
      return current.api;
    },
    config,
    dataDir,
    store: options.store,
    ...(userFile ? { userFile } : {}),
    async restart() {
      await current.running.close();
      current = await start();
    },
    async stop() {
      await current.running.close();
      for (const cleanup of cleanups.reverse()) await cleanup();
    },
  };
}

async function seedDatabaseUsers(database: Record<string, unknown>, dataDir: string, users: SeedUser[]) {
  const settings = svcdConfigSchema.parse({ database }).database;
  const db = await openDatabase(settings, { dataDir });
  try {
    const names = { userTable: 'users', groupTable: 'groups' };
    await ensureUserTables(db, names);
    const store = new DatabaseUserStore(db, names);
    for (const u of users)
      await store.create({
        username: u.username,
        passwordHash: await seedHash(u.password),
        groups: u.groups,
        ...(u.twoFaSendTo === undefined ? {} : { twoFaSendTo: u.twoFaSendTo }),
      });
  } finally {
    await db.close();
  }
}

async function seedClientAuth(
  clientAuth: NonNullable<TestServerOptions['clientAuth']>,
  server: Record<string, unknown>,
  database: Record<string, unknown>,
  dataDir: string,
) {
  const entries = Object.entries(clientAuth.entries);
  if (clientAuth.source === 'static') {
    const [first] = entries;
    if (!first || entries.length > 1) throw new Error('the static client credential is exactly one entry');
    server.auth = `${first[0]}:${first[1]}`;
  } else if (clientAuth.source === 'file') {
    server.auth_file = join(dataDir, 'clients-auth.json');
    await writeFile(server.auth_file as string, JSON.stringify(clientAuth.entries), { mode: 0o600 });
  } else {
    server.auth_table = 'clients_auth';
    const settings = svcdConfigSchema.parse({ database }).database;
    const db = await openDatabase(settings, { dataDir });
    try {
      const store = await TableClientAuthStore.open(db, 'clients_auth');
      for (const [id, password] of entries) await store.create({ id, password });
    } finally {
      await db.close();
    }
  }
}
