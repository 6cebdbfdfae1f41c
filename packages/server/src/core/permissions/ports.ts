import type { PermissionMap } from '@svc/protocol';

/** A row of the spec's group_details table, its JSON text read (unknown permission names dropped). */
export interface GroupDetails {
  name: string;
  permissions: PermissionMap;
  /** The client scope (issue 28 §2), kept in the permissions JSON under `client_groups`; null: no limit. */
  clientGroups: readonly string[] | null;
  tunnelsRestricted: Record<string, unknown>;
  commandsRestricted: Record<string, unknown>;
}

/** The group_details table (with the membership table for names and deletion); database user store only. */
export interface GroupDetailsRepository {
  /** The rows of these groups; a group without a row is absent. */
  find(names: readonly string[]): Promise<GroupDetails[]>;
  list(): Promise<GroupDetails[]>;
  /** The distinct group names users are members of. */
  memberGroups(): Promise<string[]>;
  /** Inserts or replaces the row of `details.name`. */
  save(details: GroupDetails): Promise<void>;
  /** Removes the row and every membership of the group; false when neither existed. */
  delete(name: string): Promise<boolean>;
}
