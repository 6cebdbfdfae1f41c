import {
  clientGroupScopeSchema,
  commandsRestrictedSchema,
  tunnelsRestrictedSchema,
  type CommandsRestricted,
  type TunnelsRestricted,
} from '@svc/protocol';
import type { z } from 'zod';
import { storedPolicyInvalid } from '../core/access/policy-errors.js';
import type { GroupPolicyChange, GroupPolicyRepository, StoredGroupPolicy } from '../core/access/ports.js';
import type { Database } from './database.js';
import { isDeadlock, isUniqueViolation, withStorageErrors } from './errors.js';
import { userTablesDb, type UserTableNames, type UserTablesDb } from './user-tables.js';

/** The key of the `permissions` JSON that holds a group's client scope (the other keys are permission flags). */
export const CLIENT_GROUPS_KEY = 'client_groups';

function parseJson(group: string, column: string, text: string | null): Record<string, unknown> {
  if (text === null || text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw storedPolicyInvalid(group, `${column} is not JSON`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw storedPolicyInvalid(group, `${column} is not a JSON object`);
  return value as Record<string, unknown>;
}

function checked<T>(group: string, column: string, schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw storedPolicyInvalid(
    group,
    `${column}: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`.trim(),
  );
}

interface Row {
  name: string;
  permissions: string | null;
  tunnels_restricted: string | null;
  commands_restricted: string | null;
}

function toPolicy(row: Row): StoredGroupPolicy {
  const permissions = parseJson(row.name, 'permissions', row.permissions);
  return {
    group: row.name,
    clientGroups: checked(
      row.name,
      `permissions.${CLIENT_GROUPS_KEY}`,
      clientGroupScopeSchema,
      permissions[CLIENT_GROUPS_KEY] ?? null,
    ),
    commandsRestricted: checked<CommandsRestricted>(
      row.name,
      'commands_restricted',
      commandsRestrictedSchema,
      parseJson(row.name, 'commands_restricted', row.commands_restricted),
    ),
    tunnelsRestricted: checked<TunnelsRestricted>(
      row.name,
      'tunnels_restricted',
      tunnelsRestrictedSchema,
      parseJson(row.name, 'tunnels_restricted', row.tunnels_restricted),
    ),
  };
}

/**
 * The scope and restrictions of user groups in the spec's `group_details` table (`[api] group_details_table`):
 * the client scope inside the `permissions` JSON under `client_groups` — the table belongs to the operator's
 * user store and svcd never alters existing ones, so no new column — and the restrictions in
 * `commands_restricted` and `tunnels_restricted`. Saving keeps the other keys of `permissions`.
 */
export class SqlGroupPolicyRepository implements GroupPolicyRepository {
  readonly #db: UserTablesDb;

  constructor(database: Database, names: UserTableNames & { groupDetailsTable: string }) {
    this.#db = userTablesDb(database, names);
  }

  policiesOf(groups: readonly string[]): Promise<StoredGroupPolicy[]> {
    return withStorageErrors(async () => {
      const rows = await this.#db
        .selectFrom('group_details_table')
        .select(['name', 'permissions', 'tunnels_restricted', 'commands_restricted'])
        .where('name', 'in', [...new Set(groups)])
        .execute();
      // The engines' collations may match names case-insensitively; group names are exact.
      const wanted = new Set(groups);
      return rows.filter((row) => wanted.has(row.name)).map(toPolicy);
    });
  }

  async save(group: string, change: GroupPolicyChange): Promise<void> {
    try {
      await this.write(group, change);
    } catch (err) {
      // Another writer created the row between our read and insert: it exists now, so update it.
      if (!isUniqueViolation(err) && !isDeadlock(err)) throw err;
      await this.write(group, change);
    }
  }

  private write(group: string, change: GroupPolicyChange): Promise<void> {
    return withStorageErrors(() =>
      this.#db.transaction().execute(async (tx) => {
        const row = await tx
          .selectFrom('group_details_table')
          .select(['permissions'])
          .where('name', '=', group)
          .executeTakeFirst();
        const values: { permissions?: string; commands_restricted?: string; tunnels_restricted?: string } =
          {};
        if (change.clientGroups !== undefined) {
          const permissions = parseJson(group, 'permissions', row?.permissions ?? null);
          if (change.clientGroups === null) delete permissions[CLIENT_GROUPS_KEY];
          else permissions[CLIENT_GROUPS_KEY] = [...change.clientGroups];
          values.permissions = JSON.stringify(permissions);
        }
        if (change.commandsRestricted !== undefined)
          values.commands_restricted = JSON.stringify(change.commandsRestricted);
        if (change.tunnelsRestricted !== undefined)
          values.tunnels_restricted = JSON.stringify(change.tunnelsRestricted);
        if (!row) {
          await tx
            .insertInto('group_details_table')
            .values({
              name: group,
              permissions: values.permissions ?? '{}',
              commands_restricted: values.commands_restricted ?? '{}',
              tunnels_restricted: values.tunnels_restricted ?? '{}',
            })
            .execute();
        } else if (Object.keys(values).length > 0) {
          await tx.updateTable('group_details_table').set(values).where('name', '=', group).execute();
        }
      }),
    );
  }
}
