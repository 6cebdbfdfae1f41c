import { normalizeName } from '@svc/protocol';
import type { PasswordHasher } from '../core/auth/ports.js';
import type { UserStore } from '../core/users/user-store.js';
import type { SvcdConfig } from '../config/schema.js';
import { DatabaseUserStore } from './database-user-store.js';
import type { Database } from './database.js';
import { SqlGroupDetailsRepository } from './group-details-repository.js';
import { FileUserStore } from './file-user-store.js';
import { createStaticUserStore } from './static-user-store.js';
import { ensureUserTables } from './user-tables.js';

/** Opens the one user store the `[api]` section names (the schema guarantees there is exactly one). */
export async function openUserStore(
  api: SvcdConfig['api'],
  getDatabase: () => Promise<Database>,
  hasher: PasswordHasher,
): Promise<UserStore> {
  if (api.auth) {
    const colon = api.auth.indexOf(':');
    const username = normalizeName(api.auth.slice(0, colon));
    return createStaticUserStore(username, await hasher.hash(api.auth.slice(colon + 1)));
  }
  if (api.auth_file) return FileUserStore.open(api.auth_file);
  if (api.auth_user_table && api.auth_group_table) {
    const names = {
      userTable: api.auth_user_table,
      groupTable: api.auth_group_table,
      ...(api.group_details_table ? { groupDetailsTable: api.group_details_table } : {}),
    };
    const database = await getDatabase();
    await ensureUserTables(database, names);
    return new DatabaseUserStore(database, names);
  }
  throw new Error('[api] auth, auth_file or auth_user_table: configure exactly one user store');
}

/**
 * The group_details table when `[api] group_details_table` names one beside the database user tables (the
 * schema refuses it otherwise); undefined turns group permissions off. openUserStore has created the table.
 */
export function openGroupDetails(
  api: SvcdConfig['api'],
  database: Database,
): SqlGroupDetailsRepository | undefined {
  if (!api.auth_user_table || !api.auth_group_table || !api.group_details_table) return undefined;
  return new SqlGroupDetailsRepository(database, {
    userTable: api.auth_user_table,
    groupTable: api.auth_group_table,
    groupDetailsTable: api.group_details_table,
  });
}
