import type { AuditOutcome, ListQuery } from '@svc/protocol';

/** One append-only audit record (GET /auditlog); `request` and `response` are JSON text. */
export interface AuditRecord {
  timestamp: Date;
  username: string;
  remote_ip: string;
  application: string;
  action: string;
  outcome: AuditOutcome;
  affected_id: string;
  client_id: string;
  client_hostname: string;
  request: string;
  response: string;
}

/** `since` (inclusive) and `until` (exclusive) of GET /auditlog, on top of the list grammar's filters. */
export interface AuditRange {
  since?: Date | undefined;
  until?: Date | undefined;
}

/** Where audit records are kept: appended in batches, listed, and purged by age only (never changed). */
export interface AuditRepository {
  append(records: readonly AuditRecord[]): Promise<void>;
  list(query: ListQuery, range?: AuditRange): Promise<{ data: AuditRecord[]; count: number }>;
  /** Every record matching the query's filters and sort, without paging, a batch at a time (CSV export). */
  stream(query: ListQuery, batch: number, range?: AuditRange): AsyncGenerator<AuditRecord[]>;
  /** Deletes the records older than `cutoff`; returns how many. */
  purgeBefore(cutoff: Date): Promise<number>;
}

/** A copy of each record sent elsewhere (syslog to a SIEM); must not block or throw. */
export interface AuditForwarder {
  forward(record: AuditRecord): void;
  close(): Promise<void>;
}

/** The few log calls the audit log makes. */
export interface AuditLogger {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}
