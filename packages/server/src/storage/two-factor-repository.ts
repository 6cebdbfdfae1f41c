import { sql } from 'kysely';
import type { Selectable } from 'kysely';
import type {
  PendingLogin,
  PendingLoginStore,
  TotpSecretRecord,
  TotpSecretStore,
} from '../core/two-factor/ports.js';
import type { Database } from './database.js';
import { isUniqueViolation, withStorageErrors } from './errors.js';
import type { TwoFaLoginsTable, UserTotpTable } from './schema.js';

const nullableNumber = (value: number | string | null): number | null =>
  value === null ? null : Number(value);

function toPendingLogin(row: Selectable<TwoFaLoginsTable>): PendingLogin {
  const codeExpiresAt = nullableNumber(row.code_expires_at);
  return {
    sessionId: row.session_id,
    username: row.username,
    codeHash: row.code_hash,
    codeExpiresAt: codeExpiresAt === null ? null : new Date(codeExpiresAt),
    attempts: Number(row.attempts),
    tokenLifetimeS: nullableNumber(row.token_lifetime_s),
    expiresAt: new Date(Number(row.expires_at)),
  };
}

/** Pending two-factor logins in `two_fa_logins`; attempts are counted by one conditional UPDATE. */
export class SqlPendingLoginStore implements PendingLoginStore {
  constructor(private readonly database: Database) {}

  create(login: PendingLogin): Promise<void> {
    return withStorageErrors(async () => {
      await this.database.db
        .insertInto('two_fa_logins')
        .values({
          session_id: login.sessionId,
          username: login.username,
          code_hash: login.codeHash,
          code_expires_at: login.codeExpiresAt?.getTime() ?? null,
          attempts: login.attempts,
          token_lifetime_s: login.tokenLifetimeS,
          expires_at: login.expiresAt.getTime(),
        })
        .execute();
    });
  }

  find(sessionId: string): Promise<PendingLogin | undefined> {
    return withStorageErrors(async () => {
      const row = await this.database.db
        .selectFrom('two_fa_logins')
        .selectAll()
        .where('session_id', '=', sessionId)
        .executeTakeFirst();
      return row && toPendingLogin(row);
    });
  }

  countAttempt(sessionId: string, limit: number): Promise<boolean> {
    return withStorageErrors(async () => {
      const result = await this.database.db
        .updateTable('two_fa_logins')
        .set({ attempts: sql<number>`attempts + 1` })
        .where('session_id', '=', sessionId)
        .where('attempts', '<', limit)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    });
  }

  consume(sessionId: string): Promise<boolean> {
    return withStorageErrors(async () => {
      const result = await this.database.db
        .deleteFrom('two_fa_logins')
        .where('session_id', '=', sessionId)
        .executeTakeFirst();
      return result.numDeletedRows > 0n;
    });
  }

  purgeExpired(now: Date): Promise<number> {
    return withStorageErrors(async () => {
      const result = await this.database.db
        .deleteFrom('two_fa_logins')
        .where('expires_at', '<=', now.getTime())
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }
}

function toTotpRecord(row: Selectable<UserTotpTable>): TotpSecretRecord {
  return {
    username: row.username,
    secret: row.secret,
    lastUsedStep: nullableNumber(row.last_used_step),
    createdAt: new Date(Number(row.created_at)),
  };
}

/** Authenticator-app secrets in `user_totp`, one row per user; replay protection by a conditional UPDATE. */
export class SqlTotpSecretStore implements TotpSecretStore {
  constructor(private readonly database: Database) {}

  find(username: string): Promise<TotpSecretRecord | undefined> {
    return withStorageErrors(async () => {
      const row = await this.database.db
        .selectFrom('user_totp')
        .selectAll()
        .where('username', '=', username)
        .executeTakeFirst();
      return row && toTotpRecord(row);
    });
  }

  create(record: TotpSecretRecord): Promise<boolean> {
    return withStorageErrors(async () => {
      try {
        await this.database.db
          .insertInto('user_totp')
          .values({
            username: record.username,
            secret: record.secret,
            last_used_step: record.lastUsedStep,
            created_at: record.createdAt.getTime(),
          })
          .execute();
        return true;
      } catch (err) {
        if (isUniqueViolation(err)) return false;
        throw err;
      }
    });
  }

  delete(username: string): Promise<boolean> {
    return withStorageErrors(async () => {
      const result = await this.database.db
        .deleteFrom('user_totp')
        .where('username', '=', username)
        .executeTakeFirst();
      return result.numDeletedRows > 0n;
    });
  }

  markUsed(username: string, step: number): Promise<boolean> {
    return withStorageErrors(async () => {
      const result = await this.database.db
        .updateTable('user_totp')
        .set({ last_used_step: step })
        .where('username', '=', username)
        .where((eb) => eb.or([eb('last_used_step', 'is', null), eb('last_used_step', '<', step)]))
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    });
  }
}
