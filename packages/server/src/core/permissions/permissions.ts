import { AppError, ERROR_CODES, type Permission, type PermissionMap } from '@svc/protocol';
import { ADMIN_GROUP, isAdmin, type UserRecord } from '../users/user-store.js';
import { ALL_PERMISSIONS, NO_PERMISSIONS, unionOf, WITHOUT_GROUP_PERMISSIONS } from './permission-map.js';
import type { GroupDetailsRepository } from './ports.js';

/**
 * What a user may do: Administrators everything; with group permissions on (a group_details table) the union of
 * the user's groups' rows, a group without a row granting nothing; without them WITHOUT_GROUP_PERMISSIONS.
 * Read from the table on every check, so a change (or a change made on another node) applies to the next request.
 */
export class Permissions {
  constructor(private readonly groups: GroupDetailsRepository | undefined) {}

  get enabled(): boolean {
    return this.groups !== undefined;
  }

  async effective(user: Pick<UserRecord, 'groups'>): Promise<PermissionMap> {
    if (isAdmin(user)) return ALL_PERMISSIONS;
    if (!this.groups) return WITHOUT_GROUP_PERMISSIONS;
    if (user.groups.length === 0) return NO_PERMISSIONS;
    const rows = await this.groups.find(user.groups);
    return unionOf(rows.map((row) => row.permissions));
  }

  /** Throws the 403 naming the permission when none of the user's groups grants it. */
  async assert(user: Pick<UserRecord, 'groups'>, permission: Permission): Promise<void> {
    if (isAdmin(user)) return;
    const granted = await this.effective(user);
    if (!granted[permission]) throw permissionRequired(permission, user.groups, this.enabled);
  }
}

export function permissionRequired(
  permission: Permission,
  groups: readonly string[],
  enabled: boolean,
): AppError {
  const detail = enabled
    ? `none of your user groups (${groups.join(', ') || 'none'}) grants "${permission}"; ` +
      `an administrator grants it with PUT /api/v1/user-groups/{name}`
    : `without [api] group_details_table only ${ADMIN_GROUP} has "${permission}"`;
  return new AppError(
    'forbidden',
    ERROR_CODES.permissionRequired,
    `Missing permission "${permission}"`,
    detail,
  );
}
