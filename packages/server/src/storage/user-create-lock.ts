import { sql } from 'kysely';
import type { Transaction } from 'kysely';
import type { DbEngine } from './database.js';
import { storageUnavailable } from './errors.js';
import type { StorageSchema, UserTablesSchema } from './schema.js';
import type { UserTablesDb } from './user-tables.js';

type Tx = Transaction<StorageSchema & UserTablesSchema>;

const MYSQL_LOCK_WAIT_S = 10;

/**
 * Runs `work` in a transaction that no other user creation on the same table (in this or another process)
 * runs beside, so a check over all existing names stays true until the new row is committed.
 * - PostgreSQL: the table is locked in SHARE ROW EXCLUSIVE mode (readers go on; other writers wait).
 * - MySQL/MariaDB: a named lock (GET_LOCK) held on the transaction's connection until after the commit; gap locks
 *   would depend on the isolation level and deadlock on an empty table.
 * - SQLite: one writer at a time already; `work` must write before it reads so it takes the write lock first.
 */
export async function serialiseUserCreation(
  db: UserTablesDb,
  engine: DbEngine,
  userTable: string,
  work: (tx: Tx) => Promise<void>,
): Promise<void> {
  if (engine === 'postgres') {
    await db.transaction().execute(async (tx) => {
      await sql`lock table ${sql.table('user_table')} in share row exclusive mode`.execute(tx);
      await work(tx);
    });
    return;
  }
  if (engine === 'mysql') {
    const name = `svcd.user-create.${userTable}`.slice(0, 64);
    await db.connection().execute(async (connection) => {
      const { rows } = await sql<{
        got: number | null;
      }>`select get_lock(${name}, ${MYSQL_LOCK_WAIT_S}) as got`.execute(connection);
      if (Number(rows[0]?.got) !== 1) {
        throw storageUnavailable(`another user creation held the lock for ${MYSQL_LOCK_WAIT_S} s`);
      }
      try {
        await connection.transaction().execute(work);
      } finally {
        // A connection that broke has lost the lock with its session; the error that broke it is the one to see.
        await sql`select release_lock(${name})`.execute(connection).catch(() => undefined);
      }
    });
    return;
  }
  await db.transaction().execute(work);
}
