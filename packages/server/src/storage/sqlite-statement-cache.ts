import type SQLite from 'better-sqlite3';
import type { SqliteDatabase } from 'kysely';

const MAX_STATEMENTS = 256;

/**
 * The better-sqlite3 handle Kysely uses, with prepared statements kept per SQL text. Kysely prepares every
 * query afresh, which costs more than running it; the same few queries run on every API request.
 * A statement still busy (an unfinished iteration) is never handed out twice.
 */
export function cachingStatements(db: SQLite.Database, max = MAX_STATEMENTS): SqliteDatabase {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => {
      cache.clear();
      db.close();
    },
    prepare(source: string) {
      const cached = cache.get(source);
      if (cached && !cached.busy) {
        // Re-insert to keep the map in least-recently-used order.
        cache.delete(source);
        cache.set(source, cached);
        return cached;
      }
      const statement = db.prepare(source);
      cache.set(source, statement);
      if (cache.size > max) cache.delete(cache.keys().next().value as string);
      return statement;
    },
  };
}
