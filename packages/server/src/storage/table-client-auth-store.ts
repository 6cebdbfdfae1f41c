import { sql, type Kysely } from 'kysely';
import { AppError, ERROR_CODES, type ListQuery } from '@svc/protocol';
import type { ClientAuthStore, ClientCredential } from '../core/clients-auth/client-auth-store.js';
import type { Database } from './database.js';
import { checkTableColumns, createTableIfMissing, withTableOptions } from './ddl.js';
import { isUniqueViolation, withStorageErrors } from './errors.js';
import { executeSqlList } from './list-query-sql.js';
import type { StorageSchema } from './schema.js';
import { TableNamePlugin } from './table-names.js';

// A type alias, not an interface: Kysely's withTables needs an index-compatible record type.
type ClientAuthTableSchema = {
  client_auth_table: { id: string; password: string };
};

const CONFIG_KEY = '[server] auth_table';
const COLUMNS = { id: 'id' } as const;

/** `[server] auth_table`: credentials in a database table with columns id and password (spec 5.7). */
export class TableClientAuthStore implements ClientAuthStore {
  readonly kind = 'database';

  private constructor(private readonly db: Kysely<StorageSchema & ClientAuthTableSchema>) {}

  /** Creates the table when it does not exist (an existing one is used as it is) and opens the store. */
  static async open(database: Database, table: string): Promise<TableClientAuthStore> {
    const db = database.db
      .withTables<ClientAuthTableSchema>()
      .withPlugin(new TableNamePlugin({ client_auth_table: table }));
    await createTableIfMissing(table, CONFIG_KEY, () =>
      withTableOptions(
        database.engine,
        db.schema
          .createTable('client_auth_table')
          .ifNotExists()
          .addColumn('id', 'varchar(100)', (col) => col.primaryKey())
          .addColumn('password', 'varchar(100)', (col) => col.notNull()),
      ).execute(),
    );
    await checkTableColumns(table, CONFIG_KEY, 'the client credential store', () =>
      db
        .selectFrom('client_auth_table')
        .select(['id', 'password'])
        .where(sql<boolean>`1 = 0`)
        .execute(),
    );
    return new TableClientAuthStore(db);
  }

  get(id: string): Promise<ClientCredential | undefined> {
    return withStorageErrors(() =>
      this.db
        .selectFrom('client_auth_table')
        .select(['id', 'password'])
        .where('id', '=', id)
        .executeTakeFirst(),
    );
  }

  list(query: ListQuery): Promise<{ data: ClientCredential[]; count: number }> {
    return withStorageErrors(async () => {
      const base = this.db.selectFrom('client_auth_table').select(['id', 'password']);
      const { rows, count } = await executeSqlList(base, query, COLUMNS, { tieBreaker: 'id' });
      return { data: rows, count };
    });
  }

  create(credential: ClientCredential): Promise<void> {
    return withStorageErrors(async () => {
      try {
        await this.db.insertInto('client_auth_table').values(credential).execute();
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        throw new AppError(
          'conflict',
          ERROR_CODES.clientAuthExists,
          `Client credential '${credential.id}' already exists`,
        );
      }
    });
  }

  delete(id: string): Promise<boolean> {
    return withStorageErrors(async () => {
      const result = await this.db.deleteFrom('client_auth_table').where('id', '=', id).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    });
  }
}
