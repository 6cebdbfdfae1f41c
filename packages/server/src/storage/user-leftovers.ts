import type { Database } from './database.js';
import { withStorageErrors } from './errors.js';

/**
 * Removes what svcd keeps about a user outside the user store: API tokens, saved views, the authenticator-app secret and
 * pending two-factor logins, in one transaction, so a new user of the same name starts clean.
 */
export function deleteUserLeftovers(database: Database, username: string): Promise<void> {
  return withStorageErrors(async () => {
    await database.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('api_tokens').where('username', '=', username).execute();
      await tx.deleteFrom('saved_views').where('username', '=', username).execute();
      await tx.deleteFrom('user_totp').where('username', '=', username).execute();
      await tx.deleteFrom('two_fa_logins').where('username', '=', username).execute();
    });
  });
}
