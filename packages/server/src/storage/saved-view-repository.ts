import type { Selectable } from 'kysely';
import { savedViewPageSchema } from '@svc/protocol';
import { savedViewErrors } from '../core/saved-views/saved-view-errors.js';
import type { SavedViewChanges, SavedViewRecord, SavedViewRepository } from '../core/saved-views/ports.js';
import type { Database } from './database.js';
import { isUniqueViolation, withStorageErrors } from './errors.js';
import type { SavedViewsTable } from './schema.js';

function columnsOf(text: string): string[] {
  const parsed: unknown = JSON.parse(text);
  return Array.isArray(parsed) ? parsed.filter((c): c is string => typeof c === 'string') : [];
}

const fromRow = (row: Selectable<SavedViewsTable>): SavedViewRecord => ({
  id: row.id,
  username: row.username,
  name: row.name,
  page: savedViewPageSchema.parse(row.page),
  search: row.search,
  columns: columnsOf(row.columns),
  sort: row.sort,
  createdAt: new Date(Number(row.created_at)),
  updatedAt: new Date(Number(row.updated_at)),
});

/** Saved views in the `saved_views` table (migration 014_saved_views). */
export class SqlSavedViewRepository implements SavedViewRepository {
  constructor(private readonly database: Database) {}

  insert(view: SavedViewRecord): Promise<'inserted' | 'id-taken'> {
    return withStorageErrors(async () => {
      try {
        await this.database.db
          .insertInto('saved_views')
          .values({
            id: view.id,
            username: view.username,
            name: view.name,
            page: view.page,
            search: view.search,
            columns: JSON.stringify(view.columns),
            sort: view.sort,
            created_at: view.createdAt.getTime(),
            updated_at: view.updatedAt.getTime(),
          })
          .execute();
        return 'inserted';
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        // Two keys can clash: the id (drawn at random) or the user's view name.
        const clash = await this.database.db
          .selectFrom('saved_views')
          .select('id')
          .where('id', '=', view.id)
          .executeTakeFirst();
        if (clash) return 'id-taken';
        throw savedViewErrors.nameTaken(view.name);
      }
    });
  }

  listOf(username: string): Promise<SavedViewRecord[]> {
    return withStorageErrors(async () => {
      const rows = await this.database.db
        .selectFrom('saved_views')
        .selectAll()
        .where('username', '=', username)
        .execute();
      return rows.map(fromRow);
    });
  }

  countOf(username: string): Promise<number> {
    return withStorageErrors(async () => {
      const row = await this.database.db
        .selectFrom('saved_views')
        .select((eb) => eb.fn.countAll().as('count'))
        .where('username', '=', username)
        .executeTakeFirst();
      return Number(row?.count ?? 0);
    });
  }

  find(username: string, id: string): Promise<SavedViewRecord | undefined> {
    return withStorageErrors(async () => {
      const row = await this.database.db
        .selectFrom('saved_views')
        .selectAll()
        .where('id', '=', id)
        .where('username', '=', username)
        .executeTakeFirst();
      return row ? fromRow(row) : undefined;
    });
  }

  update(username: string, id: string, changes: SavedViewChanges): Promise<SavedViewRecord | undefined> {
    return withStorageErrors(async () => {
      const set = {
        updated_at: changes.updatedAt.getTime(),
        ...(changes.name === undefined ? {} : { name: changes.name }),
        ...(changes.search === undefined ? {} : { search: changes.search }),
        ...(changes.columns === undefined ? {} : { columns: JSON.stringify(changes.columns) }),
        ...(changes.sort === undefined ? {} : { sort: changes.sort }),
      };
      try {
        await this.database.db
          .updateTable('saved_views')
          .set(set)
          .where('id', '=', id)
          .where('username', '=', username)
          .execute();
      } catch (err) {
        if (isUniqueViolation(err) && changes.name !== undefined)
          throw savedViewErrors.nameTaken(changes.name);
        throw err;
      }
      // MySQL counts only changed rows, so the answer comes from a read rather than the update's count.
      return this.find(username, id);
    });
  }

  delete(username: string, id: string): Promise<boolean> {
    return withStorageErrors(async () => {
      const result = await this.database.db
        .deleteFrom('saved_views')
        .where('id', '=', id)
        .where('username', '=', username)
        .executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    });
  }
}
