import type { ExpiringRecords, LoginThrottleStore } from '../core/auth/login-throttle-store.js';
import type { Database } from './database.js';
import { withStorageErrors } from './errors.js';

/** Expired rows are deleted every this many writes of one node. */
const SWEEP_EVERY = 1024;

class SqlRecords<T> implements ExpiringRecords<T> {
  constructor(
    private readonly database: Database,
    private readonly kind: string,
    /** Shared by the three record sets of one store. */
    private readonly writes: { count: number },
  ) {}

  get(key: string, now: number): Promise<T | undefined> {
    return withStorageErrors(async () => {
      const row = await this.database.db
        .selectFrom('login_throttle')
        .select('value')
        .where('kind', '=', this.kind)
        .where('key', '=', key)
        .where('expires_at', '>', now)
        .executeTakeFirst();
      return row === undefined ? undefined : (JSON.parse(row.value) as T);
    });
  }

  set(key: string, value: T, expiresAt: number, now: number): Promise<void> {
    return withStorageErrors(async () => {
      this.writes.count += 1;
      if (this.writes.count % SWEEP_EVERY === 0)
        await this.database.db.deleteFrom('login_throttle').where('expires_at', '<=', now).execute();
      const columns = { value: JSON.stringify(value), expires_at: expiresAt };
      const insert = this.database.db
        .insertInto('login_throttle')
        .values({ kind: this.kind, key, ...columns });
      await (
        this.database.engine === 'mysql'
          ? insert.onDuplicateKeyUpdate(columns)
          : insert.onConflict((oc) => oc.columns(['kind', 'key']).doUpdateSet(columns))
      ).execute();
    });
  }

  delete(key: string): Promise<void> {
    return withStorageErrors(async () => {
      await this.database.db
        .deleteFrom('login_throttle')
        .where('kind', '=', this.kind)
        .where('key', '=', key)
        .execute();
    });
  }
}

/**
 * The login throttle's state in the `login_throttle` table: what the nodes of a cluster share, so that failed
 * logins count together and a ban on one node holds on all. Two nodes counting the same failure at once may
 * each write their count (the last write wins): a ban may come one failure late, never wrongly.
 */
export function sqlLoginThrottleStore(database: Database): LoginThrottleStore {
  const writes = { count: 0 };
  return {
    addresses: new SqlRecords(database, 'address', writes),
    userAtAddress: new SqlRecords(database, 'user_at_address', writes),
    users: new SqlRecords(database, 'user', writes),
  };
}
