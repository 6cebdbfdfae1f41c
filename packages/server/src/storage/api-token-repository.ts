import type { Selectable } from 'kysely';
import { apiTokenScopeSchema } from '@svc/protocol';
import { apiTokenErrors } from '../core/api-tokens/api-token-errors.js';
import type { ApiTokenChanges, ApiTokenRecord, ApiTokenRepository } from '../core/api-tokens/ports.js';
import type { Database } from './database.js';
import { isUniqueViolation, withStorageErrors } from './errors.js';
import type { ApiTokensTable } from './schema.js';

const fromRow = (row: Selectable<ApiTokensTable>): ApiTokenRecord => ({
  prefix: row.prefix,
  username: row.username,
  name: row.name,
  scope: apiTokenScopeSchema.parse(row.scope),
  secretHash: row.secret_hash,
  createdAt: new Date(Number(row.created_at)),
  expiresAt: new Date(Number(row.expires_at)),
  ...(row.last_used_at === null ? {} : { lastUsedAt: new Date(Number(row.last_used_at)) }),
});

/** Personal API tokens in the `api_tokens` table (migrations 009_api_tokens, 020_api_token_last_used). */
export class SqlApiTokenRepository implements ApiTokenRepository {
  constructor(private readonly database: Database) {}

  insert(token: ApiTokenRecord): Promise<'inserted' | 'prefix-taken'> {
    return withStorageErrors(async () => {
      try {
        await this.database.db
          .insertInto('api_tokens')
          .values({
            prefix: token.prefix,
            username: token.username,
            name: token.name,
            scope: token.scope,
            secret_hash: token.secretHash,
            created_at: token.createdAt.getTime(),
            expires_at: token.expiresAt.getTime(),
          })
          .execute();
        return 'inserted';
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        // Two keys can clash: the prefix (drawn at random) or the user's token name.
        if (await this.findByPrefix(token.prefix)) return 'prefix-taken';
        throw apiTokenErrors.nameTaken(token.name);
      }
    });
  }

  findByPrefix(prefix: string): Promise<ApiTokenRecord | undefined> {
    return withStorageErrors(async () => {
      const row = await this.database.db
        .selectFrom('api_tokens')
        .selectAll()
        .where('prefix', '=', prefix)
        .executeTakeFirst();
      return row ? fromRow(row) : undefined;
    });
  }

  listOf(username: string): Promise<ApiTokenRecord[]> {
    return withStorageErrors(async () => {
      const rows = await this.database.db
        .selectFrom('api_tokens')
        .selectAll()
        .where('username', '=', username)
        .execute();
      return rows.map(fromRow);
    });
  }

  update(username: string, prefix: string, changes: ApiTokenChanges): Promise<ApiTokenRecord | undefined> {
    return withStorageErrors(async () => {
      const set = {
        ...(changes.name === undefined ? {} : { name: changes.name }),
        ...(changes.expiresAt === undefined ? {} : { expires_at: changes.expiresAt.getTime() }),
      };
      try {
        await this.database.db
          .updateTable('api_tokens')
          .set(set)
          .where('prefix', '=', prefix)
          .where('username', '=', username)
          .execute();
      } catch (err) {
        if (isUniqueViolation(err) && changes.name !== undefined)
          throw apiTokenErrors.nameTaken(changes.name);
        throw err;
      }
      // MySQL counts only changed rows, so the answer comes from a read rather than the update's count.
      const row = await this.database.db
        .selectFrom('api_tokens')
        .selectAll()
        .where('prefix', '=', prefix)
        .where('username', '=', username)
        .executeTakeFirst();
      return row ? fromRow(row) : undefined;
    });
  }

  markUsed(prefix: string, at: Date): Promise<void> {
    return withStorageErrors(async () => {
      await this.database.db
        .updateTable('api_tokens')
        .set({ last_used_at: at.getTime() })
        .where('prefix', '=', prefix)
        .execute();
    });
  }

  delete(username: string, prefix: string): Promise<boolean> {
    return withStorageErrors(async () => {
      const result = await this.database.db
        .deleteFrom('api_tokens')
        .where('prefix', '=', prefix)
        .where('username', '=', username)
        .executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    });
  }
}
