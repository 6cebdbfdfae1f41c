import type { Selectable } from 'kysely';
import type { AlertDelivery, ListQuery } from '@svc/protocol';
import type { AlertDeliveryRepository } from '../core/alerts/ports.js';
import type { Database } from './database.js';
import { withStorageErrors } from './errors.js';
import { executeSqlList, type SqlColumnMap } from './list-query-sql.js';
import type { AlertDeliveriesTable } from './schema.js';

const COLUMNS: SqlColumnMap = {
  id: { column: 'id', type: 'number', notNull: true },
  alert_id: { column: 'alert_id', notNull: true },
  rule: { column: 'rule', notNull: true },
  event: { column: 'event', notNull: true },
  channel: { column: 'channel', notNull: true },
  attempt: { column: 'attempt', type: 'number', notNull: true },
  at: { column: 'at', type: 'time', notNull: true },
  outcome: { column: 'outcome', notNull: true },
  http_status: { column: 'http_status', type: 'number' },
  node: { column: 'node', notNull: true },
};

/** Rows per INSERT (11 parameters each; well under every engine's limit). */
const INSERT_ROWS = 500;
/** Longest error text kept (a reason is a line or two; a receiver's answer is not stored). */
const MAX_ERROR = 2000;

const cut = (value: string, max: number): string => (value.length <= max ? value : value.slice(0, max));

const toRow = (entry: Omit<AlertDelivery, 'id'>) => ({
  alert_id: cut(entry.alert_id, 64),
  rule: cut(entry.rule, 100),
  event: entry.event,
  channel: entry.channel,
  target: entry.target,
  attempt: entry.attempt,
  at: Date.parse(entry.at),
  outcome: entry.outcome,
  http_status: entry.http_status,
  error: cut(entry.error, MAX_ERROR),
  node: cut(entry.node, 255),
});

const toDelivery = (row: Selectable<AlertDeliveriesTable>): AlertDelivery => ({
  id: Number(row.id),
  alert_id: row.alert_id,
  rule: row.rule,
  event: row.event as AlertDelivery['event'],
  channel: row.channel as AlertDelivery['channel'],
  target: row.target,
  attempt: Number(row.attempt),
  at: new Date(Number(row.at)).toISOString(),
  outcome: row.outcome as AlertDelivery['outcome'],
  http_status: row.http_status === null ? null : Number(row.http_status),
  error: row.error,
  node: row.node,
});

/** The alert delivery log in `alert_deliveries` (migration 025): inserted in batches, trimmed by id. */
export class SqlAlertDeliveryRepository implements AlertDeliveryRepository {
  constructor(private readonly database: Database) {}

  append(entries: readonly Omit<AlertDelivery, 'id'>[]): Promise<void> {
    if (entries.length === 0) return Promise.resolve();
    return withStorageErrors(async () => {
      for (let i = 0; i < entries.length; i += INSERT_ROWS) {
        await this.database.db
          .insertInto('alert_deliveries')
          .values(entries.slice(i, i + INSERT_ROWS).map(toRow))
          .execute();
      }
    });
  }

  list(query: ListQuery): Promise<{ data: AlertDelivery[]; count: number }> {
    return withStorageErrors(async () => {
      const base = this.database.db.selectFrom('alert_deliveries').selectAll();
      const { rows, count } = await executeSqlList(base, query, COLUMNS, { tieBreaker: 'id' });
      return { data: rows.map(toDelivery), count };
    });
  }

  keepNewest(keep: number): Promise<number> {
    return withStorageErrors(async () => {
      // Two statements: MySQL cannot delete from a table a subquery of the same statement reads with LIMIT.
      const oldestGone = await this.database.db
        .selectFrom('alert_deliveries')
        .select('id')
        .orderBy('id', 'desc')
        .limit(1)
        .offset(keep)
        .executeTakeFirst();
      if (!oldestGone) return 0;
      const result = await this.database.db
        .deleteFrom('alert_deliveries')
        .where('id', '<=', Number(oldestGone.id))
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }
}
