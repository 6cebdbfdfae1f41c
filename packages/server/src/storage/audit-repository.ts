import type { Kysely, Selectable } from 'kysely';
import type { AuditOutcome, ListQuery } from '@svc/protocol';
import type { AuditRange, AuditRecord, AuditRepository } from '../core/audit/ports.js';
import { AuditCounts } from './audit-counts.js';
import type { Database } from './database.js';
import { withStorageErrors } from './errors.js';
import {
  executeSqlList,
  orderByListSort,
  paginateList,
  whereListFilters,
  type SqlColumnMap,
} from './list-query-sql.js';
import type { AuditLogTable, StorageSchema } from './schema.js';

const COLUMNS: SqlColumnMap = {
  timestamp: { column: 'timestamp', type: 'time', notNull: true },
  username: { column: 'username', notNull: true },
  remote_ip: { column: 'remote_ip', notNull: true },
  application: { column: 'application', notNull: true },
  action: { column: 'action', notNull: true },
  outcome: { column: 'outcome', notNull: true },
  affected_id: { column: 'affected_id', notNull: true },
  client_id: { column: 'client_id', notNull: true },
  client_hostname: { column: 'client_hostname', notNull: true },
};

/**
 * Sorted by time, the (lower(column), timestamp) indexes serve filter and ORDER BY together, so a page reads only its
 * rows; an `id` tie-breaker in another direction would sort every match. Other sorts break ties by id.
 */
const tieBreakerOf = (query: ListQuery): { tieBreaker?: string } =>
  query.sort.some((s) => s.field === 'timestamp') ? {} : { tieBreaker: 'id' };

/** Rows per INSERT (11 parameters each; well under every engine's limit). */
const INSERT_ROWS = 500;

const cut = (value: string, max: number): string => (value.length <= max ? value : value.slice(0, max));

const toRow = (r: AuditRecord) => ({
  timestamp: r.timestamp.getTime(),
  username: cut(r.username, 150),
  remote_ip: cut(r.remote_ip, 64),
  application: cut(r.application, 64),
  action: cut(r.action, 32),
  outcome: r.outcome,
  affected_id: cut(r.affected_id, 255),
  client_id: cut(r.client_id, 100),
  client_hostname: cut(r.client_hostname, 255),
  request: r.request,
  response: r.response,
});

function toRecord(row: Selectable<AuditLogTable>): AuditRecord {
  return {
    timestamp: new Date(Number(row.timestamp)),
    username: row.username,
    remote_ip: row.remote_ip,
    application: row.application,
    action: row.action,
    outcome: row.outcome as AuditOutcome,
    affected_id: row.affected_id,
    client_id: row.client_id,
    client_hostname: row.client_hostname,
    request: row.request,
    response: row.response,
  };
}

/**
 * The audit log in `audit_log` (migration 019_audit_log): inserted in batches, never updated. On SQLite the
 * counters of `audit_counts` (030) change in the same transactions as the records and answer the counts of
 * single equality filters.
 */
export class SqlAuditRepository implements AuditRepository {
  private readonly counts: AuditCounts | undefined;

  constructor(private readonly database: Database) {
    this.counts = database.engine === 'sqlite' ? new AuditCounts() : undefined;
  }

  append(records: readonly AuditRecord[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    const rows = records.map(toRow);
    const counts = this.counts;
    return withStorageErrors(async () => {
      // One statement commits alone; more (several INSERTs, the counters) share a transaction, so a failed batch
      // leaves nothing behind (the queue writes it again whole) and the counters always match the rows.
      if (!counts && rows.length <= INSERT_ROWS) {
        await this.database.db.insertInto('audit_log').values(rows).execute();
        return;
      }
      await this.database.db.transaction().execute(async (trx) => {
        for (let i = 0; i < rows.length; i += INSERT_ROWS) {
          await trx
            .insertInto('audit_log')
            .values(rows.slice(i, i + INSERT_ROWS))
            .execute();
        }
        await counts?.added(trx, rows);
      });
    });
  }

  private select(range: AuditRange) {
    let base = this.database.db.selectFrom('audit_log').selectAll();
    if (range.since) base = base.where('timestamp', '>=', range.since.getTime());
    if (range.until) base = base.where('timestamp', '<', range.until.getTime());
    return base;
  }

  list(query: ListQuery, range: AuditRange = {}): Promise<{ data: AuditRecord[]; count: number }> {
    return withStorageErrors(async () => {
      const base = this.select(range);
      const counts = this.counts;
      const { rows, count } = await executeSqlList(base, query, COLUMNS, {
        ...tieBreakerOf(query),
        ...(counts && { count: () => counts.countOf(this.database.db, query, range) }),
      });
      return { data: rows.map(toRecord), count };
    });
  }

  async *stream(query: ListQuery, batch: number, range: AuditRange = {}): AsyncGenerator<AuditRecord[]> {
    const base = whereListFilters(this.select(range), query.filters, COLUMNS);
    const sorted = orderByListSort(base, query.sort, COLUMNS, tieBreakerOf(query).tieBreaker);
    for (let offset = 0; ; offset += batch) {
      const rows = await withStorageErrors(() => paginateList(sorted, { limit: batch, offset }).execute());
      if (rows.length > 0) yield rows.map(toRecord);
      if (rows.length < batch) return;
    }
  }

  purgeBefore(cutoff: Date): Promise<number> {
    const cutoffMs = cutoff.getTime();
    const counts = this.counts;
    const purge = async (db: Kysely<StorageSchema>) => {
      const result = await db.deleteFrom('audit_log').where('timestamp', '<', cutoffMs).executeTakeFirst();
      return Number(result.numDeletedRows);
    };
    return withStorageErrors(() =>
      counts
        ? this.database.db.transaction().execute(async (trx) => {
            await counts.purging(trx, cutoffMs);
            return purge(trx);
          })
        : purge(this.database.db),
    );
  }
}
