import type { Selectable } from 'kysely';
import { clientGroupParamsSchema, type ClientGroupParams, type ListQuery } from '@svc/protocol';
import { BoundedMap } from '../core/bounded-map.js';
import { groupErrors } from '../core/client-groups/group-errors.js';
import type { ClientGroupRepository, StoredClientGroup } from '../core/client-groups/ports.js';
import type { Database } from './database.js';
import { isUniqueViolation, withStorageErrors } from './errors.js';
import { executeSqlList, type SqlColumnMap } from './list-query-sql.js';
import type { ClientGroupsTable } from './schema.js';

const COLUMNS: SqlColumnMap = { id: 'id', description: 'description' };

/** Parsed params by their stored text: every group_ids request reads its groups, parsing is the bulk of that. */
const parsedParams = new BoundedMap<string, ClientGroupParams>(10_000);

/**
 * Params were validated on the way in; parsing again fills keys a later version may add with null. Groups with
 * the same stored params share one (read-only) params object.
 */
const fromRow = (row: Selectable<ClientGroupsTable>): StoredClientGroup => {
  let params = parsedParams.get(row.params);
  if (!params) {
    params = clientGroupParamsSchema.parse(JSON.parse(row.params));
    parsedParams.set(row.params, params);
  }
  return { id: row.id, description: row.description, params };
};

const toRow = (group: StoredClientGroup): ClientGroupsTable => ({
  id: group.id,
  description: group.description,
  params: JSON.stringify(group.params),
});

/** Client groups in the `client_groups` table (migration 006_client_groups). */
export class SqlClientGroupRepository implements ClientGroupRepository {
  constructor(private readonly database: Database) {}

  insert(group: StoredClientGroup): Promise<void> {
    return withStorageErrors(async () => {
      try {
        await this.database.db.insertInto('client_groups').values(toRow(group)).execute();
      } catch (err) {
        if (isUniqueViolation(err)) throw groupErrors.exists(group.id);
        throw err;
      }
    });
  }

  update(group: StoredClientGroup): Promise<boolean> {
    return withStorageErrors(async () => {
      const { description, params } = toRow(group);
      const result = await this.database.db
        .updateTable('client_groups')
        .set({ description, params })
        .where('id', '=', group.id)
        .executeTakeFirst();
      // MySQL counts only changed rows; a PUT repeating the stored values changes none, so ask when it says 0.
      if (Number(result.numUpdatedRows) > 0) return true;
      return (await this.get(group.id)) !== undefined;
    });
  }

  delete(id: string): Promise<boolean> {
    return withStorageErrors(async () => {
      const result = await this.database.db
        .deleteFrom('client_groups')
        .where('id', '=', id)
        .executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    });
  }

  get(id: string): Promise<StoredClientGroup | undefined> {
    return withStorageErrors(async () => {
      const row = await this.database.db
        .selectFrom('client_groups')
        .selectAll()
        .where('id', '=', id)
        .executeTakeFirst();
      return row ? fromRow(row) : undefined;
    });
  }

  getMany(ids: readonly string[]): Promise<StoredClientGroup[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return withStorageErrors(async () => {
      const rows = await this.database.db
        .selectFrom('client_groups')
        .selectAll()
        .where('id', 'in', [...ids])
        .execute();
      // MySQL's collation is binary here, but a case-insensitive engine setting must not widen the match.
      return rows.filter((row) => ids.includes(row.id)).map(fromRow);
    });
  }

  all(): Promise<StoredClientGroup[]> {
    return withStorageErrors(async () => {
      const rows = await this.database.db.selectFrom('client_groups').selectAll().execute();
      return rows.map(fromRow);
    });
  }

  list(query: ListQuery): Promise<{ data: StoredClientGroup[]; count: number }> {
    return withStorageErrors(async () => {
      const base = this.database.db.selectFrom('client_groups').selectAll();
      const { rows, count } = await executeSqlList(base, query, COLUMNS, { tieBreaker: 'id' });
      return { data: rows.map(fromRow), count };
    });
  }
}
