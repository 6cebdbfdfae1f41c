import {
  AppError,
  ERROR_CODES,
  nameProblem,
  PERMISSIONS,
  type PermissionMap,
  type UpdateUserGroupBody,
  type UserGroup,
} from '@svc/protocol';
import { ADMIN_GROUP, assertAdmin, type UserRecord } from '../users/user-store.js';
import { ALL_PERMISSIONS, NO_PERMISSIONS } from './permission-map.js';
import type { GroupDetails, GroupDetailsRepository } from './ports.js';
import { validateGroupPolicy } from '../access/group-policies.js';

const groupPermissionsOff = () =>
  new AppError(
    'invalid',
    ERROR_CODES.groupPermissionsOff,
    'User groups need group permissions',
    'set [api] group_details_table with database user tables (auth_user_table); the static user and the ' +
      'user file have no group_details table',
  );

const administratorsFixed = () =>
  new AppError(
    'invalid',
    ERROR_CODES.administratorsGroupFixed,
    `The ${ADMIN_GROUP} group cannot be changed or deleted`,
    `${ADMIN_GROUP} always has every permission and no restriction`,
  );

const nameMismatch = (name: string, sent: string) =>
  new AppError(
    'invalid',
    ERROR_CODES.invalidRequest,
    'Invalid request body',
    `name: "${sent}" is not the group of the path ("${name}"); groups are not renamed`,
  );

const emptyGroup = (name: string): GroupDetails => ({
  name,
  permissions: name === ADMIN_GROUP ? ALL_PERMISSIONS : NO_PERMISSIONS,
  clientGroups: null,
  tunnelsRestricted: {},
  commandsRestricted: {},
});

const toApi = (group: GroupDetails): UserGroup => ({
  name: group.name,
  permissions: { ...group.permissions },
  client_groups: group.clientGroups === null ? null : [...group.clientGroups],
  tunnels_restricted: group.tunnelsRestricted,
  commands_restricted: group.commandsRestricted,
});

/** GET/PUT/DELETE /user-groups (OpenRPort's shape): Administrators only, database user store with group_details. */
export class UserGroupsService {
  constructor(
    private readonly groups: GroupDetailsRepository | undefined,
    /** Told after a save, so the access checks drop the limits they remember. */
    private readonly policiesChanged: () => void = () => undefined,
  ) {}

  /** Rows and member groups merged, by name; Administrators always listed with every permission. */
  async list(caller: UserRecord): Promise<UserGroup[]> {
    const repo = this.repository(caller);
    const byName = new Map<string, GroupDetails>();
    for (const name of [ADMIN_GROUP, ...(await repo.memberGroups())]) byName.set(name, emptyGroup(name));
    for (const row of await repo.list()) if (row.name !== ADMIN_GROUP) byName.set(row.name, row);
    return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map(toApi);
  }

  /** A group without a row is answered with nothing granted (Administrators: everything). */
  async get(caller: UserRecord, name: string): Promise<UserGroup> {
    const repo = this.repository(caller);
    if (name === ADMIN_GROUP) return toApi(emptyGroup(name));
    const [row] = await repo.find([name]);
    return toApi(row ?? emptyGroup(name));
  }

  async update(caller: UserRecord, name: string, body: UpdateUserGroupBody): Promise<UserGroup> {
    const repo = this.repository(caller);
    if (name === ADMIN_GROUP) throw administratorsFixed();
    const problem = nameProblem(name);
    if (problem !== undefined)
      throw new AppError('invalid', ERROR_CODES.invalidRequest, 'Invalid group name', problem);
    if (body.name !== undefined && body.name !== name) throw nameMismatch(name, body.name);
    const [stored] = await repo.find([name]);
    const current = stored ?? emptyGroup(name);
    const sent = body.permissions;
    const permissions = sent
      ? (Object.fromEntries(PERMISSIONS.map((p) => [p, sent[p] === true])) as PermissionMap)
      : current.permissions;
    // The scope and the restrictions are checked before anything is stored (400 ERR_INVALID_GROUP_POLICY).
    const policy = validateGroupPolicy(name, {
      ...(body.client_groups === undefined ? {} : { client_groups: body.client_groups }),
      ...(body.tunnels_restricted === undefined ? {} : { tunnels_restricted: body.tunnels_restricted }),
      ...(body.commands_restricted === undefined ? {} : { commands_restricted: body.commands_restricted }),
    });
    const next: GroupDetails = {
      name,
      permissions,
      clientGroups: policy.clientGroups === undefined ? current.clientGroups : policy.clientGroups,
      tunnelsRestricted: body.tunnels_restricted ?? current.tunnelsRestricted,
      commandsRestricted: body.commands_restricted ?? current.commandsRestricted,
    };
    await repo.save(next);
    this.policiesChanged();
    return toApi(next);
  }

  /** Removes the group's row and its memberships (OpenRPort does the same); 204 whether or not it existed. */
  async delete(caller: UserRecord, name: string): Promise<void> {
    const repo = this.repository(caller);
    if (name === ADMIN_GROUP) throw administratorsFixed();
    await repo.delete(name);
    this.policiesChanged();
  }

  private repository(caller: UserRecord): GroupDetailsRepository {
    assertAdmin(caller, 'user groups');
    if (!this.groups) throw groupPermissionsOff();
    return this.groups;
  }
}
