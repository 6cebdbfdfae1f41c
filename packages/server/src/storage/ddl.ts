import { isUnavailableError } from './errors.js';
import { sql } from 'kysely';
import type { CreateTableBuilder } from 'kysely';
import type { DbEngine } from './database.js';

/**
 * Engine-specific table options for CREATE TABLE. MySQL/MariaDB tables are created as InnoDB with utf8mb4 and
 * the binary collation: utf8mb4 stores every Unicode username (4-byte characters included) whatever the
 * database default is, and a binary collation makes comparisons case-sensitive like PostgreSQL and SQLite
 * (the server default, utf8mb4_general_ci, would treat "Alice" and "alice" as one user). Note that
 * utf8mb4_bin is a PAD SPACE collation: trailing spaces are ignored in comparisons on MySQL/MariaDB only.
 */
export function withTableOptions<T extends string, C extends string>(
  engine: DbEngine,
  builder: CreateTableBuilder<T, C>,
): CreateTableBuilder<T, C> {
  return engine === 'mysql'
    ? builder.modifyEnd(sql`engine = InnoDB default character set = utf8mb4 collate = utf8mb4_bin`)
    : builder;
}

/** A constraint name derived from a table name, kept within the 63/64-character limits of PostgreSQL/MySQL. */
export function constraintName(table: string, suffix: string): string {
  const name = `${table}_${suffix}`;
  if (name.length <= 63) return name;
  let hash = 0;
  for (const ch of table) hash = (Math.imul(hash, 31) + ch.charCodeAt(0)) >>> 0;
  return `${table.slice(0, 63 - suffix.length - 10)}_${hash.toString(16).padStart(8, '0')}_${suffix}`;
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** Runs a CREATE TABLE IF NOT EXISTS; the error names the table and the config key that names it. */
export async function createTableIfMissing(
  name: string,
  configKey: string,
  create: () => Promise<void>,
): Promise<void> {
  try {
    await create();
  } catch {
    // Two nodes starting at once can race on CREATE TABLE IF NOT EXISTS (PostgreSQL reports a duplicate
    // catalog row); the second attempt then finds the table.
    try {
      await create();
    } catch (err) {
      throw new Error(`cannot create the table "${name}" (${configKey}): ${messageOf(err)}`, { cause: err });
    }
  }
}

/** Runs a probe selecting the columns `user` reads from an existing table; names the config key if one lacks. */
export async function checkTableColumns(
  name: string,
  configKey: string,
  user: string,
  probe: () => Promise<unknown>,
): Promise<void> {
  try {
    await probe();
  } catch (err) {
    if (isUnavailableError(err)) throw err;
    throw new Error(
      `the existing table "${name}" (${configKey}) lacks a column ${user} needs: ${messageOf(err)}`,
      {
        cause: err,
      },
    );
  }
}
