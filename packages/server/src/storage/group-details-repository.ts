import type { GroupDetails, GroupDetailsRepository } from '../core/permissions/ports.js';
import { parseObject, parsePermissions, permissionsText } from '../core/permissions/permission-map.js';
import type { Database } from './database.js';
import { CLIENT_GROUPS_KEY } from './group-policy-repository.js';
import { isDeadlock, isUniqueViolation, withStorageErrors } from './errors.js';
import { userTablesDb, type UserTableNames, type UserTablesDb } from './user-tables.js';

type Row = { name: string; permissions: string; tunnels_restricted: string; commands_restricted: string };

const clientGroupsOf = (text: string): readonly string[] | null => {
  const scope = parseObject(text)[CLIENT_GROUPS_KEY];
  return Array.isArray(scope) ? scope.filter((id): id is string => typeof id === 'string') : null;
};

const toDetails = (row: Row): GroupDetails => ({
  name: row.name,
  permissions: parsePermissions(row.permissions),
  clientGroups: clientGroupsOf(row.permissions),
  tunnelsRestricted: parseObject(row.tunnels_restricted),
  commandsRestricted: parseObject(row.commands_restricted),
});

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The spec's group_details table (named by `[api] group_details_table`) and the membership table. Names are
 * compared exactly in code as well: MySQL/MariaDB's default collation would let `ops` read the row of `Ops`.
 */
export class SqlGroupDetailsRepository implements GroupDetailsRepository {
  readonly #db: UserTablesDb;

  constructor(database: Database, names: UserTableNames & { groupDetailsTable: string }) {
    this.#db = userTablesDb(database, names);
  }

  find(names: readonly string[]): Promise<GroupDetails[]> {
    if (names.length === 0) return Promise.resolve([]);
    return withStorageErrors(async () => {
      const rows = await this.#db
        .selectFrom('group_details_table')
        .selectAll()
        .where('name', 'in', [...names])
        .execute();
      return rows.filter((row) => names.includes(row.name)).map(toDetails);
    });
  }

  list(): Promise<GroupDetails[]> {
    return withStorageErrors(async () => {
      const rows = await this.#db.selectFrom('group_details_table').selectAll().execute();
      return rows.map(toDetails).sort((a, b) => byCodeUnits(a.name, b.name));
    });
  }

  memberGroups(): Promise<string[]> {
    return withStorageErrors(async () => {
      const rows = await this.#db.selectFrom('group_table').select('group').distinct().execute();
      return [...new Set(rows.map((row) => row.group))].sort(byCodeUnits);
    });
  }

  save(details: GroupDetails): Promise<void> {
    const values = {
      name: details.name,
      // The permissions JSON also holds the client scope (group-policy-repository.ts).
      permissions: JSON.stringify({
        ...JSON.parse(permissionsText(details.permissions)),
        ...(details.clientGroups === null ? {} : { [CLIENT_GROUPS_KEY]: details.clientGroups }),
      }),
      tunnels_restricted: JSON.stringify(details.tunnelsRestricted),
      commands_restricted: JSON.stringify(details.commandsRestricted),
    };
    const replace = () =>
      this.#db.transaction().execute(async (tx) => {
        await tx.deleteFrom('group_details_table').where('name', '=', details.name).execute();
        await tx.insertInto('group_details_table').values(values).execute();
      });
    return withStorageErrors(async () => {
      try {
        await replace();
      } catch (err) {
        // Two saves of the same new group at once: the loser's insert meets the winner's row (or, on
        // MySQL/MariaDB, the two delete-then-insert transactions deadlock on the gap lock); replace it again.
        if (!isUniqueViolation(err) && !isDeadlock(err)) throw err;
        await replace();
      }
    });
  }

  delete(name: string): Promise<boolean> {
    return withStorageErrors(() =>
      this.#db.transaction().execute(async (tx) => {
        const members = await tx.deleteFrom('group_table').where('group', '=', name).executeTakeFirst();
        const row = await tx.deleteFrom('group_details_table').where('name', '=', name).executeTakeFirst();
        return members.numDeletedRows + row.numDeletedRows > 0n;
      }),
    );
  }
}
