import { AppError, ERROR_CODES } from '@svc/protocol';
import type { Selectable, Transaction } from 'kysely';
import type { NewUser, UserChanges, UserRecord, UserStore } from '../core/users/user-store.js';
import { findLookAlike, userExistsError } from '../core/users/username.js';
import type { Database, DbEngine } from './database.js';
import { isUniqueViolation, withStorageErrors } from './errors.js';
import { serialiseUserCreation } from './user-create-lock.js';
import type { StorageSchema, UsersTable, UserTablesSchema } from './schema.js';
import { ensureUserTables, USER_COLUMNS, userTablesDb } from './user-tables.js';
import type { UserTableNames, UserTablesDb } from './user-tables.js';

type Tx = Transaction<StorageSchema & UserTablesSchema>;

const userNotFound = (username: string): AppError =>
  new AppError(
    'not_found',
    ERROR_CODES.userNotFound,
    'User not found',
    `cannot find user by username '${username}'`,
  );

/** BOOLEAN as returned by PostgreSQL (boolean), MySQL/MariaDB and SQLite (0/1), or a text column. */
const toBoolean = (value: UserRow['password_expired']): boolean =>
  value === true ||
  value === 1 ||
  (typeof value === 'string' && ['1', 't', 'true'].includes(value.toLowerCase()));

/** Code-unit order: the same on every engine, whatever the database collation says. */
const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * API users in the database tables named by `[api]` (spec 5.2 item 3). Writes are seen at once; every write
 * runs in one transaction, and writes come before reads inside it so SQLite takes its write lock first.
 */
export class DatabaseUserStore implements UserStore {
  readonly kind = 'database' as const;
  readonly writesVisibleAtOnce = true;
  readonly #db: UserTablesDb;
  readonly #engine: DbEngine;
  readonly #userTable: string;

  constructor(database: Database, names: UserTableNames) {
    this.#db = userTablesDb(database, names);
    this.#engine = database.engine;
    this.#userTable = names.userTable;
  }

  /** Creates missing tables (ensureUserTables), then the store. */
  static async open(database: Database, names: UserTableNames): Promise<DatabaseUserStore> {
    await ensureUserTables(database, names);
    return new DatabaseUserStore(database, names);
  }

  find(username: string): Promise<UserRecord | undefined> {
    return withStorageErrors(async () => {
      const row = await this.#db
        .selectFrom('user_table')
        .select(USER_COLUMNS)
        .where('username', '=', username)
        .executeTakeFirst();
      if (row === undefined) return undefined;
      const groups = await this.#db
        .selectFrom('group_table')
        .select('group')
        .where('username', '=', username)
        .execute();
      return toRecord(
        row,
        groups.map((g) => g.group),
      );
    });
  }

  list(): Promise<UserRecord[]> {
    return withStorageErrors(async () => {
      const rows = await this.#db.selectFrom('user_table').select(USER_COLUMNS).execute();
      const memberships = await this.#db.selectFrom('group_table').select(['username', 'group']).execute();
      const groupsOf = new Map<string, string[]>();
      for (const { username, group } of memberships) {
        const list = groupsOf.get(username);
        if (list) list.push(group);
        else groupsOf.set(username, [group]);
      }
      return rows
        .map((row) => toRecord(row, groupsOf.get(row.username) ?? []))
        .sort((a, b) => byCodeUnits(a.username, b.username));
    });
  }

  listForWrite(): Promise<UserRecord[]> {
    return this.list();
  }

  /**
   * Refuses a name that equals or looks like an existing one (see lookAlikeKey). The unique index only catches
   * exact duplicates, so creations are serialised: two creating `bob` and `BOB` at once cannot both pass the check.
   */
  create(user: NewUser): Promise<void> {
    return withStorageErrors(async () => {
      try {
        await serialiseUserCreation(this.#db, this.#engine, this.#userTable, async (tx) => {
          // Membership rows left behind without a user (written by hand) must not leak into the new user.
          // On SQLite this first write also takes the database's write lock before the names are read.
          await tx.deleteFrom('group_table').where('username', '=', user.username).execute();
          const names = await tx.selectFrom('user_table').select('username').execute();
          const taken = findLookAlike(
            names.map((row) => row.username),
            user.username,
          );
          if (taken !== undefined) throw userExistsError(user.username, taken);
          await tx
            .insertInto('user_table')
            .values({ username: user.username, password: user.passwordHash })
            .execute();
          await insertGroups(tx, user.username, user.groups);
        });
      } catch (err) {
        if (isUniqueViolation(err)) throw userExistsError(user.username, user.username);
        throw err;
      }
    });
  }

  update(username: string, changes: UserChanges): Promise<void> {
    return withStorageErrors(() =>
      this.#db.transaction().execute(async (tx) => {
        if (changes.passwordHash !== undefined) {
          await tx
            .updateTable('user_table')
            .set({ password: changes.passwordHash })
            .where('username', '=', username)
            .execute();
        }
        if (changes.twoFaSendTo !== undefined) {
          await tx
            .updateTable('user_table')
            .set({ two_fa_send_to: changes.twoFaSendTo === '' ? null : changes.twoFaSendTo })
            .where('username', '=', username)
            .execute();
        }
        if (changes.groups !== undefined) {
          await tx.deleteFrom('group_table').where('username', '=', username).execute();
          await insertGroups(tx, username, changes.groups);
        }
        const found = await tx
          .selectFrom('user_table')
          .select('username')
          .where('username', '=', username)
          .executeTakeFirst();
        if (found === undefined) throw userNotFound(username); // rolls the transaction back
      }),
    );
  }

  delete(username: string): Promise<void> {
    return withStorageErrors(() =>
      this.#db.transaction().execute(async (tx) => {
        await tx.deleteFrom('group_table').where('username', '=', username).execute();
        const result = await tx.deleteFrom('user_table').where('username', '=', username).executeTakeFirst();
        if (result.numDeletedRows === 0n) throw userNotFound(username);
      }),
    );
  }

  reload(): Promise<void> {
    return Promise.resolve();
  }
}

async function insertGroups(tx: Tx, username: string, groups: readonly string[]): Promise<void> {
  const unique = [...new Set(groups)];
  if (unique.length === 0) return;
  await tx
    .insertInto('group_table')
    .values(unique.map((group) => ({ username, group })))
    .execute();
}

type UserRow = Pick<Selectable<UsersTable>, (typeof USER_COLUMNS)[number]>;

function toRecord(row: UserRow, groups: string[]): UserRecord {
  return {
    username: row.username,
    passwordHash: row.password,
    groups: [...groups].sort(byCodeUnits),
    twoFaSendTo: row.two_fa_send_to,
    totpSecret: row.totp_secret,
    passwordExpired: toBoolean(row.password_expired),
  };
}
