import type { SessionRecord, SessionStore } from '../core/auth/ports.js';
import type { Database } from './database.js';
import { withStorageErrors } from './errors.js';

/** API sessions in the `api_sessions` table; expiry compared as epoch milliseconds in SQL. */
export class SqlSessionStore implements SessionStore {
  readonly #database: Database;

  constructor(database: Database) {
    this.#database = database;
  }

  create(session: SessionRecord): Promise<void> {
    return withStorageErrors(async () => {
      await this.#database.db
        .insertInto('api_sessions')
        .values({
          id: session.id,
          username: session.username,
          created_at: session.createdAt.getTime(),
          expires_at: session.expiresAt.getTime(),
        })
        .execute();
    });
  }

  isActive(id: string, now: Date): Promise<boolean> {
    return withStorageErrors(async () => {
      const row = await this.#database.db
        .selectFrom('api_sessions')
        .select('id')
        .where('id', '=', id)
        .where('expires_at', '>', now.getTime())
        .executeTakeFirst();
      return row !== undefined;
    });
  }

  revoke(id: string): Promise<boolean> {
    return withStorageErrors(async () => {
      const result = await this.#database.db
        .deleteFrom('api_sessions')
        .where('id', '=', id)
        .executeTakeFirst();
      return result.numDeletedRows > 0n;
    });
  }

  purgeExpired(now: Date): Promise<number> {
    return withStorageErrors(async () => {
      const result = await this.#database.db
        .deleteFrom('api_sessions')
        .where('expires_at', '<=', now.getTime())
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }
}
