import type { ApiTokenScope } from '@svc/protocol';

/** A personal API token as stored: the secret only as its SHA-256 (see token-secret.ts). */
export interface ApiTokenRecord {
  /** Unique over all users; the token's public id. */
  prefix: string;
  username: string;
  name: string;
  scope: ApiTokenScope;
  /** Hex SHA-256 of the secret part. */
  secretHash: string;
  createdAt: Date;
  expiresAt: Date;
  /** When it was last used to log in, to the minute (see TokenUseStamps); absent when never. */
  lastUsedAt?: Date;
}

export interface ApiTokenChanges {
  name?: string;
  expiresAt?: Date;
}

/**
 * Where API tokens live: svcd's own database, whichever user store is configured (a user file and the static
 * user have their tokens there too), so a new or revoked token takes effect at once.
 */
export interface ApiTokenRepository {
  /** Throws `apiTokenErrors.nameTaken` when the user has a token of that name; a prefix clash is an answer. */
  insert(token: ApiTokenRecord): Promise<'inserted' | 'prefix-taken'>;
  findByPrefix(prefix: string): Promise<ApiTokenRecord | undefined>;
  listOf(username: string): Promise<ApiTokenRecord[]>;
  /** The changed token, or undefined when the user has none with that prefix; a name clash throws nameTaken. */
  update(username: string, prefix: string, changes: ApiTokenChanges): Promise<ApiTokenRecord | undefined>;
  delete(username: string, prefix: string): Promise<boolean>;
  /** Stores when the token was last used. */
  markUsed(prefix: string, at: Date): Promise<void>;
}
