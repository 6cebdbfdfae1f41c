import type { SvcdConfig } from '../config/schema.js';
import { AccessControl } from '../core/access/access-control.js';
import { GroupPolicies } from '../core/access/group-policies.js';
import type { ScopeMembers } from '../core/access/ports.js';
import type { UserStore } from '../core/users/user-store.js';
import type { Database } from './database.js';
import { SqlGroupPolicyRepository } from './group-policy-repository.js';

/**
 * Client scopes and restrictions live in `group_details` (issue 28 §2, §3): with the database user store and
 * `[api] group_details_table`; with any other store no group has any, and every user is unlimited.
 */
export function accessControlOf(
  api: SvcdConfig['api'],
  users: UserStore,
  database: Database,
  members: ScopeMembers,
): AccessControl {
  const repository =
    users.kind === 'database' && api.auth_user_table && api.auth_group_table && api.group_details_table
      ? new SqlGroupPolicyRepository(database, {
          userTable: api.auth_user_table,
          groupTable: api.auth_group_table,
          groupDetailsTable: api.group_details_table,
        })
      : undefined;
  return new AccessControl(new GroupPolicies(repository), members);
}
