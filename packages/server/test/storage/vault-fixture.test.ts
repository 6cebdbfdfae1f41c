/**
 * A vault made by an earlier svcd must open in this one, on every engine. fixtures/vault-v1 was written once by
 * scripts/make-vault-fixture.ts: `vault.db` is the SQLite vault file itself, `vault-rows.json` the same vault's
 * rows, loaded here into a schema migrated as far as it was then (the later migrations run over them, as they
 * would over a real vault). The vault was made with the password in NFD; it opens with that text and with its
 * NFC form.
 */
import { copyFile, readFile } from 'node:fs/promises';
import { parseListQuery, type VaultEntry } from '@svc/protocol';
import { Kysely, SqliteDialect, sql, type Insertable } from 'kysely';
import { describe, expect, test } from 'vitest';
import { createTestDatabase } from '../../../../test-support/databases.js';
import { VAULT_LIST } from '../../src/core/vault/vault-list.js';
import { VaultService } from '../../src/core/vault/vault-service.js';
import { openDatabase, type Database, type DbEngine } from '../../src/storage/database.js';
import { openSqliteFile } from '../../src/storage/dialects.js';
import { migrateToLatest } from '../../src/storage/migrations.js';
import { openVaultStorage, vaultFile } from '../../src/storage/open-vault-storage.js';
import type { VaultEntriesTable, VaultKeyTable, VaultSchema } from '../../src/storage/schema.js';
import { VAULT_SCHEMA } from '../../src/storage/vault-migrations.js';

interface VaultRows {
  password_utf8_hex: string;
  migrations: string[];
  vault_key: Insertable<VaultKeyTable>[];
  vault_entries: Insertable<VaultEntriesTable>[];
  deleted_id: number;
  expected: VaultEntry[];
}

const FIXTURE = new URL('../fixtures/vault-v1/', import.meta.url);
const rows = JSON.parse(await readFile(new URL('vault-rows.json', FIXTURE), 'utf8')) as VaultRows;
const madeWith = Buffer.from(rows.password_utf8_hex, 'hex').toString('utf8');
const READER = { username: 'reader', groups: ['Administrators', 'ops'] };
const clock = { now: () => new Date(Date.UTC(2030, 0, 1)) };

/** The vault's tables as they were when the fixture was made, with its rows in them. */
async function loadRows(main: Database, file: string): Promise<void> {
  const steps = VAULT_SCHEMA.steps.slice(0, rows.migrations.length);
  expect(steps.map((s) => s.name)).toEqual(rows.migrations);
  const db =
    main.engine === 'sqlite'
      ? new Kysely<VaultSchema>({ dialect: new SqliteDialect({ database: openSqliteFile(file, 'FULL') }) })
      : (main.db.withTables<VaultSchema>() as unknown as Kysely<VaultSchema>);
  try {
    await migrateToLatest(db, main.engine, { ...VAULT_SCHEMA, steps });
    await db.insertInto('vault_key').values(rows.vault_key).execute();
    await db.insertInto('vault_entries').values(rows.vault_entries).execute();
    // As pg_dump's restore does: the id sequence continues after the loaded ids.
    if (main.engine === 'postgres')
      await sql`select setval(pg_get_serial_sequence('vault_entries', 'id'), (select max(id) from vault_entries))`.execute(
        db,
      );
  } finally {
    if (main.engine === 'sqlite') await db.destroy();
  }
}

const CASES: [string, DbEngine, 'file' | 'rows'][] = [
  ['the committed SQLite vault file', 'sqlite', 'file'],
  ['its rows on SQLite', 'sqlite', 'rows'],
  ['its rows on PostgreSQL', 'postgres', 'rows'],
  ['its rows on MariaDB', 'mysql', 'rows'],
];

describe.each(CASES)('vault-v1: %s', (_name, engine, source) => {
  test('opens with its password and gives back every value as it was written', async () => {
    expect(madeWith.normalize('NFC')).not.toBe(madeWith);
    const testDb = await createTestDatabase(engine);
    try {
      const main = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
      try {
        const file = vaultFile(testDb.settings.db_name, testDb.dataDir);
        if (source === 'file') await copyFile(new URL('vault.db', FIXTURE), file);
        else await loadRows(main, file);

        const storage = await openVaultStorage(main, testDb.settings, testDb.dataDir);
        try {
          const vault = new VaultService(storage.repository, clock);
          expect(await vault.status()).toEqual({ init: 'setup-completed', status: 'locked' });
          // A wrong password costs a full derivation; once is enough (the engines store the same bytes).
          if (source === 'file')
            await expect(vault.unlock(READER, `${madeWith}x`)).rejects.toMatchObject({
              kind: 'unauthenticated',
            });
          // The password as typed at init (NFD) on three engines, its NFC form on one: both must open it.
          await vault.unlock(READER, source === 'file' ? madeWith.normalize('NFC') : madeWith);

          for (const entry of rows.expected) expect(await vault.get(READER, entry.id)).toEqual(entry);
          await expect(vault.get(READER, rows.deleted_id)).rejects.toMatchObject({ kind: 'not_found' });
          const listed = await vault.list(parseListQuery({ sort: 'id' }, VAULT_LIST));
          expect(listed.data.map((item) => [item.id, item.key])).toEqual(
            rows.expected.map((entry) => [entry.id, entry.key]),
          );

          // It keeps working: a new entry gets a new id and opens.
          const body = {
            client_id: 'c-new',
            required_group: '',
            key: 'new',
            value: 'fresh',
            type: 'secret',
          } as const;
          const { id } = await vault.create(READER, body);
          expect(id).toBeGreaterThan(Math.max(rows.deleted_id, ...rows.expected.map((e) => e.id)));
          expect((await vault.get(READER, id)).value).toBe('fresh');
        } finally {
          await storage.close();
        }
      } finally {
        await main.close();
      }
    } finally {
      await testDb.drop();
    }
  });
});
