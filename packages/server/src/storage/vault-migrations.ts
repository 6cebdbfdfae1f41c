import { sql } from 'kysely';
import type { DbEngine } from './database.js';
import { withTableOptions } from './ddl.js';
import type { MigrationSet, SchemaMigration } from './migrations.js';

/**
 * The vault's own migration list, recorded in its own tables: on SQLite it runs in the vault's file, on
 * PostgreSQL/MySQL in svcd's database next to the main list, so either list can grow without the other.
 * Append new steps at the end; never edit a step that has shipped.
 */
const VAULT_MIGRATIONS: readonly SchemaMigration[] = [
  {
    name: '001_vault',
    async up(db, engine: DbEngine) {
      await withTableOptions(
        engine,
        db.schema
          .createTable('vault_key')
          .addColumn('id', 'integer', (col) => col.primaryKey())
          .addColumn('kdf', 'varchar(255)', (col) => col.notNull())
          .addColumn('salt', 'varchar(255)', (col) => col.notNull())
          .addColumn('wrapped_key', 'varchar(255)', (col) => col.notNull())
          .addColumn('created_at', 'bigint', (col) => col.notNull())
          .addColumn('created_by', 'varchar(150)', (col) => col.notNull()),
      ).execute();
      // MySQL's TEXT holds 64 KiB; a sealed value is base64 of up to [api] max_request_bytes.
      const valueType = engine === 'mysql' ? sql`mediumtext` : 'text';
      let entries = db.schema.createTable('vault_entries');
      entries =
        engine === 'postgres'
          ? entries.addColumn('id', 'serial', (col) => col.primaryKey())
          : entries.addColumn('id', 'integer', (col) => col.primaryKey().autoIncrement());
      await withTableOptions(
        engine,
        entries
          .addColumn('client_id', 'varchar(100)', (col) => col.notNull())
          .addColumn('required_group', 'varchar(150)', (col) => col.notNull())
          .addColumn('key', 'varchar(255)', (col) => col.notNull())
          .addColumn('value', valueType, (col) => col.notNull())
          .addColumn('type', 'varchar(16)', (col) => col.notNull())
          .addColumn('created_at', 'bigint', (col) => col.notNull())
          .addColumn('updated_at', 'bigint', (col) => col.notNull())
          .addColumn('created_by', 'varchar(150)', (col) => col.notNull())
          .addColumn('updated_by', 'varchar(150)', (col) => col.notNull())
          .addUniqueConstraint('vault_entries_client_key', ['client_id', 'key']),
      ).execute();
    },
  },
];

export const VAULT_SCHEMA: MigrationSet = {
  steps: VAULT_MIGRATIONS,
  table: 'svcd_vault_migrations',
  lockTable: 'svcd_vault_migrations_lock',
};
