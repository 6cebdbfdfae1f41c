import type { Selectable } from 'kysely';
import { DEFAULT_JOB_TIMEOUT_SEC, type LibraryScript, type ListQuery } from '@svc/protocol';
import { libraryErrors } from '../core/library/library-errors.js';
import type { LibraryScriptRepository } from '../core/library/ports.js';
import type { Database } from './database.js';
import { isUniqueViolation, withStorageErrors } from './errors.js';
import { executeSqlList, type SqlColumnMap } from './list-query-sql.js';
import type { LibraryScriptsTable } from './schema.js';

const COLUMNS: SqlColumnMap = {
  id: { column: 'id', notNull: true },
  name: { column: 'name', notNull: true },
  created_by: { column: 'created_by', notNull: true },
  created_at: { column: 'created_at', type: 'time', notNull: true },
  updated_by: { column: 'updated_by', notNull: true },
  updated_at: { column: 'updated_at', type: 'time', notNull: true },
};

const parseTags = (json: string | null): string[] => {
  if (json === null) return [];
  const tags: unknown = JSON.parse(json);
  return Array.isArray(tags) ? tags.filter((t): t is string => typeof t === 'string') : [];
};

function toScript(row: Selectable<LibraryScriptsTable>): LibraryScript {
  return {
    id: row.id,
    name: row.name,
    interpreter: row.interpreter,
    is_sudo: Number(row.is_sudo) === 1 || row.is_sudo === true,
    cwd: row.cwd,
    script: row.script,
    tags: parseTags(row.tags),
    timeout_sec: row.timeout_sec === null ? DEFAULT_JOB_TIMEOUT_SEC : Number(row.timeout_sec),
    created_by: row.created_by,
    created_at: new Date(Number(row.created_at)).toISOString(),
    updated_by: row.updated_by ?? row.created_by,
    updated_at: new Date(Number(row.updated_at ?? row.created_at)).toISOString(),
  };
}

/** The columns a write sets besides id and created_*. */
const changeableColumns = (script: LibraryScript) => ({
  name: script.name,
  interpreter: script.interpreter,
  is_sudo: script.is_sudo ? 1 : 0,
  cwd: script.cwd,
  script: script.script,
  tags: JSON.stringify(script.tags),
  timeout_sec: script.timeout_sec,
  updated_by: script.updated_by,
  updated_at: Date.parse(script.updated_at),
});

/** The only unique key besides the UUID primary key is the name. */
async function uniqueName<T>(name: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (isUniqueViolation(err)) throw libraryErrors.nameTaken(name);
    throw err;
  }
}

/** Library scripts in the `library_scripts` table (migration 005_library_scripts). */
export class SqlLibraryScriptRepository implements LibraryScriptRepository {
  constructor(private readonly database: Database) {}

  insert(script: LibraryScript): Promise<void> {
    return withStorageErrors(() =>
      uniqueName(script.name, async () => {
        await this.database.db
          .insertInto('library_scripts')
          .values({
            id: script.id,
            ...changeableColumns(script),
            created_by: script.created_by,
            created_at: Date.parse(script.created_at),
          })
          .execute();
      }),
    );
  }

  get(id: string): Promise<LibraryScript | undefined> {
    return withStorageErrors(async () => {
      const row = await this.database.db
        .selectFrom('library_scripts')
        .selectAll()
        .where('id', '=', id)
        .executeTakeFirst();
      return row ? toScript(row) : undefined;
    });
  }

  replace(script: LibraryScript): Promise<boolean> {
    return withStorageErrors(() =>
      uniqueName(script.name, async () => {
        const result = await this.database.db
          .updateTable('library_scripts')
          .set(changeableColumns(script))
          .where('id', '=', script.id)
          .executeTakeFirst();
        return Number(result.numUpdatedRows) === 1;
      }),
    );
  }

  delete(id: string): Promise<boolean> {
    return withStorageErrors(async () => {
      const result = await this.database.db
        .deleteFrom('library_scripts')
        .where('id', '=', id)
        .executeTakeFirst();
      return Number(result.numDeletedRows) === 1;
    });
  }

  list(query: ListQuery): Promise<{ data: LibraryScript[]; count: number }> {
    return withStorageErrors(async () => {
      const base = this.database.db.selectFrom('library_scripts').selectAll();
      const { rows, count } = await executeSqlList(base, query, COLUMNS, { tieBreaker: 'id' });
      return { data: rows.map(toScript), count };
    });
  }
}
