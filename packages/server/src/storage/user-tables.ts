import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { Database } from './database.js';
import { checkTableColumns, constraintName, createTableIfMissing, withTableOptions } from './ddl.js';
import { MIGRATION_LOCK_TABLE, MIGRATION_TABLE } from './migrations.js';
import type { StorageSchema, UserTablesSchema } from './schema.js';
import { TableNamePlugin } from './table-names.js';

/** The `[api]` table names of the database user store (spec 5.2 item 3). */
export interface UserTableNames {
  userTable: string;
  groupTable: string;
  groupDetailsTable?: string;
}

const CONFIG_KEYS: Record<keyof UserTableNames, string> = {
  userTable: '[api] auth_user_table',
  groupTable: '[api] auth_group_table',
  groupDetailsTable: '[api] group_details_table',
};

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const OWN_TABLES = ['api_sessions', MIGRATION_TABLE, MIGRATION_LOCK_TABLE];

/** Checks the names are plain SQL identifiers, distinct, and not svcd's own tables; reports every problem. */
export function validateUserTableNames(names: UserTableNames): void {
  const problems: string[] = [];
  const seen = new Map<string, string>();
  for (const key of ['userTable', 'groupTable', 'groupDetailsTable'] as const) {
    const name = names[key];
    if (name === undefined) continue;
    const configKey = CONFIG_KEYS[key];
    if (!IDENTIFIER.test(name)) {
      problems.push(`${configKey} "${name}" is not a valid table name (letters, digits and _, at most 64)`);
      continue;
    }
    const folded = name.toLowerCase();
    if (OWN_TABLES.includes(folded)) problems.push(`${configKey} "${name}" is a table of svcd itself`);
    const other = seen.get(folded);
    if (other !== undefined) problems.push(`${configKey} "${name}" is the same table as ${other}`);
    seen.set(folded, configKey);
  }
  if (problems.length > 0) throw new Error(problems.join('; '));
}

export type UserTablesDb = Kysely<StorageSchema & UserTablesSchema>;

/** A typed query builder over the user tables: write queries with the logical names of UserTablesSchema. */
export function userTablesDb(database: Database, names: UserTableNames): UserTablesDb {
  validateUserTableNames(names);
  const real: Record<string, string> = { user_table: names.userTable, group_table: names.groupTable };
  if (names.groupDetailsTable !== undefined) real.group_details_table = names.groupDetailsTable;
  return database.db.withTables<UserTablesSchema>().withPlugin(new TableNamePlugin(real));
}

export const USER_COLUMNS = [
  'username',
  'password',
  'password_expired',
  'two_fa_send_to',
  'totp_secret',
] as const satisfies readonly (keyof UserTablesSchema['user_table'])[];

/**
 * Creates the user tables that do not exist yet with the spec's columns; existing tables are never altered,
 * only checked for the columns the user store reads. Throws an Error naming the `[api]` key on any problem.
 */
export async function ensureUserTables(database: Database, names: UserTableNames): Promise<void> {
  const db = userTablesDb(database, names);
  const { engine } = database;

  await createTableIfMissing(names.userTable, CONFIG_KEYS.userTable, () =>
    withTableOptions(
      engine,
      db.schema
        .createTable('user_table')
        .ifNotExists()
        .addColumn('username', 'varchar(150)', (col) => col.notNull().unique())
        .addColumn('password', 'varchar(255)', (col) => col.notNull())
        .addColumn('password_expired', 'boolean', (col) => col.notNull().defaultTo(false))
        .addColumn('two_fa_send_to', 'varchar(150)')
        .addColumn('token', 'varchar(128)')
        .addColumn('totp_secret', 'text'),
    ).execute(),
  );

  await createTableIfMissing(names.groupTable, CONFIG_KEYS.groupTable, () =>
    withTableOptions(
      engine,
      db.schema
        .createTable('group_table')
        .ifNotExists()
        .addColumn('username', 'varchar(150)', (col) => col.notNull())
        .addColumn('group', 'varchar(150)', (col) => col.notNull())
        .addUniqueConstraint(constraintName(names.groupTable, 'username_group_key'), ['username', 'group']),
    ).execute(),
  );

  if (names.groupDetailsTable !== undefined) {
    // MySQL before 8.0.13 cannot give a TEXT column a default at all, and 8.0.13+ only as an expression; so
    // on MySQL/MariaDB these JSON columns are varchar(4096), which keeps the plain '{}' default on every
    // version for anyone inserting rows directly (three of them in utf8mb4 still fit InnoDB's row limit).
    const jsonText = engine === 'mysql' ? 'varchar(4096)' : 'text';
    await createTableIfMissing(names.groupDetailsTable, CONFIG_KEYS.groupDetailsTable, () =>
      withTableOptions(
        engine,
        db.schema
          .createTable('group_details_table')
          .ifNotExists()
          .addColumn('name', 'varchar(150)', (col) => col.notNull().unique())
          .addColumn('permissions', jsonText, (col) => col.defaultTo('{}'))
          .addColumn('tunnels_restricted', jsonText, (col) => col.defaultTo('{}'))
          .addColumn('commands_restricted', jsonText, (col) => col.defaultTo('{}')),
      ).execute(),
    );
  }

  await checkTableColumns(names.userTable, CONFIG_KEYS.userTable, 'the user store', () =>
    db
      .selectFrom('user_table')
      .select(USER_COLUMNS)
      .where(sql<boolean>`1 = 0`)
      .execute(),
  );
  await checkTableColumns(names.groupTable, CONFIG_KEYS.groupTable, 'the user store', () =>
    db
      .selectFrom('group_table')
      .select(['username', 'group'])
      .where(sql<boolean>`1 = 0`)
      .execute(),
  );
}
