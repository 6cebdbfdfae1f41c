import { dirname, join } from 'node:path';
import type SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import type { VaultRepository } from '../core/vault/ports.js';
import type { Database } from './database.js';
import { openSqliteFile, sqliteFile } from './dialects.js';
import { cachingStatements } from './sqlite-statement-cache.js';
import { describeDriverError } from './errors.js';
import { migrateToLatest } from './migrations.js';
import type { VaultSchema } from './schema.js';
import { VAULT_SCHEMA } from './vault-migrations.js';
import { SqlVaultRepository } from './vault-repository.js';

export const VAULT_FILE_NAME = 'vault.db';

export interface VaultStorage {
  readonly repository: VaultRepository;
  /** Where the vault lives, for the start-up log. */
  readonly description: string;
  close(): Promise<void>;
}

/** The vault's SQLite file: `vault.db` in the folder of the main database file (the data dir by default). */
export function vaultFile(dbName: string, dataDir: string): string {
  const main = sqliteFile(dbName, dataDir);
  return main === ':memory:' ? main : join(dirname(main), VAULT_FILE_NAME);
}

/**
 * Opens the vault's storage and brings its schema up to date. With SQLite the vault is a file of its own with
 * synchronous = FULL (a write the API acknowledged survives even a power cut; vault writes are rare); with
 * PostgreSQL/MySQL it is the `vault_*` tables in svcd's database, sharing its pool.
 */
export async function openVaultStorage(
  main: Database,
  settings: { db_name: string },
  dataDir: string,
): Promise<VaultStorage> {
  if (main.engine !== 'sqlite') {
    const db = main.db.withTables<VaultSchema>() as unknown as Kysely<VaultSchema>;
    await migrateToLatest(db, main.engine, VAULT_SCHEMA);
    return {
      repository: new SqlVaultRepository(db, main.engine),
      description: `vault_* tables of the ${main.engine} database`,
      close: () => Promise.resolve(),
    };
  }
  const file = vaultFile(settings.db_name, dataDir);
  let db: Kysely<VaultSchema> | undefined;
  let handle: SQLite.Database | undefined;
  try {
    handle = openSqliteFile(file, 'FULL');
    db = new Kysely<VaultSchema>({ dialect: new SqliteDialect({ database: cachingStatements(handle) }) });
    await sql`select 1`.execute(db);
    await migrateToLatest(db, 'sqlite', VAULT_SCHEMA);
  } catch (err) {
    if (db) await db.destroy().catch(() => undefined);
    else handle?.close();
    throw new Error(`cannot open the vault database file "${file}": ${describeDriverError(err)}`, {
      cause: err,
    });
  }
  const opened = db;
  const repository = new SqlVaultRepository(opened, 'sqlite', handle);
  let closing: Promise<void> | undefined;
  return {
    repository,
    description: `sqlite file "${file}"`,
    close: () => (closing ??= opened.destroy()),
  };
}
