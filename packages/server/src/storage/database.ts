import { Kysely, sql } from 'kysely';
import { planDialect } from './dialects.js';
import { describeDriverError } from './errors.js';
import { migrateToLatest } from './migrations.js';
import type { StorageSchema } from './schema.js';

export type DbEngine = 'sqlite' | 'postgres' | 'mysql';

/** The `[database]` section. db_host, db_user and db_password apply to the networked engines only. */
export interface DatabaseSettings {
  db_type: DbEngine;
  db_name: string;
  db_host: string;
  db_user: string;
  db_password: string;
}

export interface Database {
  readonly engine: DbEngine;
  readonly db: Kysely<StorageSchema>;
  /** Closes the pool or the file; safe to call twice. */
  close(): Promise<void>;
}

/**
 * Opens the configured database, checks that it answers and brings svcd's schema up to date.
 * Throws an Error naming the engine, the target and the `[database]` keys when it cannot be reached.
 */
export async function openDatabase(
  settings: DatabaseSettings,
  options: { dataDir: string },
): Promise<Database> {
  const plan = planDialect(settings, options.dataDir);
  let db: Kysely<StorageSchema> | undefined;
  try {
    db = new Kysely<StorageSchema>({ dialect: plan.create() });
    await sql`select 1`.execute(db);
  } catch (err) {
    await db?.destroy().catch(() => undefined);
    const verb = settings.db_type === 'sqlite' ? 'cannot open' : 'cannot connect to';
    throw new Error(`${verb} ${plan.description}: ${describeDriverError(err)}`, { cause: err });
  }
  try {
    await migrateToLatest(db, settings.db_type);
  } catch (err) {
    await db.destroy().catch(() => undefined);
    const message = err instanceof Error ? err.message : String(err);
    throw new Error(`${plan.description}: ${message}`, { cause: err });
  }
  return databaseHandle(settings.db_type, db);
}

function databaseHandle(engine: DbEngine, db: Kysely<StorageSchema>): Database {
  let closing: Promise<void> | undefined;
  return {
    engine,
    db,
    close: () => (closing ??= db.destroy()),
  };
}
