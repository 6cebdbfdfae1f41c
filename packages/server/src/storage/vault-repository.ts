import type SQLite from 'better-sqlite3';
import type { CompiledQuery, Kysely, Selectable } from 'kysely';
import type { ListQuery, VaultEntryType, VaultListItem } from '@svc/protocol';
import type {
  NewVaultEntry,
  StoredVaultEntry,
  VaultEntryChange,
  VaultRepository,
} from '../core/vault/ports.js';
import type { KdfParams, VaultKeyRecord } from '../core/vault/vault-crypto.js';
import type { DbEngine } from './database.js';
import { asStorageError, isUniqueViolation, withStorageErrors } from './errors.js';
import { executeSqlList, type SqlColumnMap } from './list-query-sql.js';
import type { VaultEntriesTable, VaultSchema } from './schema.js';

const COLUMNS: SqlColumnMap = {
  id: { column: 'id', type: 'number' },
  client_id: 'client_id',
  created_by: 'created_by',
  created_at: { column: 'created_at', type: 'number' },
  key: 'key',
};

const KEY_ROW_ID = 1;

/** An entry's columns in a fixed order: the SQLite fast path reads a row as an array of these. */
const ENTRY_COLUMNS = [
  'id',
  'client_id',
  'required_group',
  'key',
  'value',
  'type',
  'created_at',
  'updated_at',
  'created_by',
  'updated_by',
] as const satisfies readonly (keyof VaultEntriesTable)[];

type EntryRow = Selectable<VaultEntriesTable>;
type EntryValues = [
  id: EntryRow['id'],
  client_id: string,
  required_group: string,
  key: string,
  value: string,
  type: string,
  created_at: EntryRow['created_at'],
  updated_at: EntryRow['updated_at'],
  created_by: string,
  updated_by: string,
];

const toEntry = (row: EntryRow): StoredVaultEntry => ({
  id: Number(row.id),
  client_id: row.client_id,
  required_group: row.required_group,
  key: row.key,
  value: row.value,
  type: row.type as VaultEntryType,
  created_at: Number(row.created_at),
  updated_at: Number(row.updated_at),
  created_by: row.created_by,
  updated_by: row.updated_by,
});

const fromValues = ([
  id,
  client_id,
  required_group,
  key,
  value,
  type,
  created_at,
  updated_at,
  created_by,
  updated_by,
]: EntryValues): StoredVaultEntry =>
  toEntry({
    id,
    client_id,
    required_group,
    key,
    value,
    type,
    created_at,
    updated_at,
    created_by,
    updated_by,
  });

/** The vault's tables (vault-migrations.ts) through Kysely, on any of the three engines. */
export class SqlVaultRepository implements VaultRepository {
  /** GET /vault/{id} is the hot path: its query is built and compiled once, only the id changes. */
  readonly #getById: CompiledQuery<EntryRow>;
  /** With SQLite, the same query prepared once on the file's handle and run directly (see the constructor). */
  readonly #getByIdNow: SQLite.Statement<[number], EntryValues> | undefined;

  /**
   * `sqlite`: the better-sqlite3 handle under `db`, once the schema is in place. GET /vault/{id} then reads
   * through it directly: Kysely's round for one query (a connection mutex and several promise hops) costs more
   * than the indexed read itself, and rows come as arrays (cheaper than objects with named properties). Safe because the vault never opens a transaction on that handle, so a
   * direct read cannot see another operation's uncommitted rows.
   */
  constructor(
    private readonly db: Kysely<VaultSchema>,
    private readonly engine: DbEngine,
    sqlite?: SQLite.Database,
  ) {
    this.#getById = db.selectFrom('vault_entries').select(ENTRY_COLUMNS).where('id', '=', 0).compile();
    this.#getByIdNow = sqlite?.prepare<[number], EntryValues>(this.#getById.sql).raw(true);
  }

  readKey(): Promise<VaultKeyRecord | undefined> {
    return withStorageErrors(async () => {
      const row = await this.db
        .selectFrom('vault_key')
        .selectAll()
        .where('id', '=', KEY_ROW_ID)
        .executeTakeFirst();
      if (!row) return undefined;
      return {
        kdf: JSON.parse(row.kdf) as KdfParams,
        salt: Buffer.from(row.salt, 'base64'),
        wrappedKey: Buffer.from(row.wrapped_key, 'base64'),
      };
    });
  }

  saveKey(record: VaultKeyRecord, createdBy: string, createdAt: number): Promise<boolean> {
    return withStorageErrors(async () => {
      try {
        await this.db
          .insertInto('vault_key')
          .values({
            id: KEY_ROW_ID,
            kdf: JSON.stringify(record.kdf),
            salt: record.salt.toString('base64'),
            wrapped_key: record.wrappedKey.toString('base64'),
            created_at: createdAt,
            created_by: createdBy,
          })
          .execute();
        return true;
      } catch (err) {
        if (isUniqueViolation(err)) return false;
        throw err;
      }
    });
  }

  insert(entry: NewVaultEntry): Promise<number | 'duplicate'> {
    return withStorageErrors(async () => {
      try {
        const insert = this.db.insertInto('vault_entries').values(entry);
        if (this.engine === 'postgres') {
          const row = await insert.returning('id').executeTakeFirstOrThrow();
          return Number(row.id);
        }
        const result = await insert.executeTakeFirstOrThrow();
        return Number(result.insertId);
      } catch (err) {
        if (isUniqueViolation(err)) return 'duplicate';
        throw err;
      }
    });
  }

  get(id: number): Promise<StoredVaultEntry | undefined> {
    const statement = this.#getByIdNow;
    if (!statement) {
      return withStorageErrors(async () => {
        const query: CompiledQuery<EntryRow> = { ...this.#getById, parameters: [id] };
        const [row] = (await this.db.executeQuery(query)).rows;
        return row ? toEntry(row) : undefined;
      });
    }
    try {
      const values = statement.get(id);
      return Promise.resolve(values ? fromValues(values) : undefined);
    } catch (err) {
      return Promise.reject(asStorageError(err));
    }
  }

  update(id: number, change: VaultEntryChange): Promise<'updated' | 'missing' | 'duplicate'> {
    return withStorageErrors(async () => {
      try {
        const result = await this.db
          .updateTable('vault_entries')
          .set(change)
          .where('id', '=', id)
          .executeTakeFirst();
        // The sealed value gets a new nonce at every write, so the row always changes and counts on every engine.
        return Number(result.numUpdatedRows) === 1 ? 'updated' : 'missing';
      } catch (err) {
        if (isUniqueViolation(err)) return 'duplicate';
        throw err;
      }
    });
  }

  delete(id: number): Promise<boolean> {
    return withStorageErrors(async () => {
      const result = await this.db.deleteFrom('vault_entries').where('id', '=', id).executeTakeFirst();
      return Number(result.numDeletedRows) === 1;
    });
  }

  list(query: ListQuery): Promise<{ data: VaultListItem[]; count: number }> {
    return withStorageErrors(async () => {
      const base = this.db
        .selectFrom('vault_entries')
        .select(['id', 'client_id', 'created_by', 'created_at', 'key']);
      const { rows, count } = await executeSqlList(base, query, COLUMNS, { tieBreaker: 'id' });
      const data = rows.map((row) => ({
        id: Number(row.id),
        client_id: row.client_id,
        created_by: row.created_by,
        created_at: new Date(Number(row.created_at)).toISOString(),
        key: row.key,
      }));
      return { data, count };
    });
  }
}
