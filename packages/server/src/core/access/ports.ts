import type { CommandsRestricted, TunnelsRestricted } from '@svc/protocol';

/** A user group's scope and restrictions as stored (its `group_details` row); absent parts are unlimited. */
export interface StoredGroupPolicy {
  group: string;
  /** The client groups the user group is limited to; null = not limited. */
  clientGroups: readonly string[] | null;
  commandsRestricted: CommandsRestricted;
  tunnelsRestricted: TunnelsRestricted;
}

/** A change of a group's policy: fields left out stay as they are. */
export interface GroupPolicyChange {
  clientGroups?: readonly string[] | null;
  commandsRestricted?: CommandsRestricted;
  tunnelsRestricted?: TunnelsRestricted;
}

/** Where the policies live (the `group_details` table of the database user store). */
export interface GroupPolicyRepository {
  /** The policies of those of these groups that have a stored row. */
  policiesOf(groups: readonly string[]): Promise<StoredGroupPolicy[]>;
  /** Writes the changed fields, creating the group's row when it has none; other fields of the row are kept. */
  save(group: string, change: GroupPolicyChange): Promise<void>;
}

/** One client group's members (a member set of the client groups' index). */
export interface MemberSet {
  has(id: string): boolean;
  /** Every member id, in no particular order. */
  all(): Iterable<string>;
  /** The member ids in `idsInOrder`'s order. Do not modify. */
  inOrder(idsInOrder: readonly string[]): readonly string[];
}

/** The members of client groups, for scopes (client-groups/ClientGroupsService). */
export interface ScopeMembers {
  /** The member sets of the client groups of these ids that exist (an unknown id has no members). */
  memberSets(groupIds: readonly string[]): Promise<MemberSet[]>;
  /** The clients in any of these sets, in `idsInOrder`'s order, each once. */
  unionInOrder(sets: readonly MemberSet[], idsInOrder: readonly string[]): string[];
}
