import { AUDIT_FIELDS, type AuditRecordData, type ListQuery } from '@svc/protocol';
import type { AuditRange, AuditRecord, AuditRepository } from './ports.js';

export const toAuditData = (record: AuditRecord): AuditRecordData => ({
  ...record,
  timestamp: record.timestamp.toISOString(),
});

const csvCell = (value: string): string =>
  /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;

/**
 * GET /auditlog: reading the audit log needs the `auditlog` permission (the route declares it; Administrators
 * and, with group permissions, groups granting it). There is no way to change or delete a record through the API.
 */
export class AuditService {
  constructor(private readonly repository: AuditRepository) {}

  async list(query: ListQuery, range: AuditRange = {}) {
    const { data, count } = await this.repository.list(query, range);
    return { data: data.map(toAuditData), count };
  }

  /** The matching records as CSV lines (RFC 4180, header first). */
  export(query: ListQuery, range: AuditRange = {}): AsyncGenerator<string> {
    const repository = this.repository;
    return (async function* () {
      yield `${AUDIT_FIELDS.join(',')}\r\n`;
      for await (const batch of repository.stream(query, 1000, range)) {
        yield batch
          .map((r) => {
            const row = toAuditData(r);
            return `${AUDIT_FIELDS.map((f) => csvCell(row[f])).join(',')}\r\n`;
          })
          .join('');
      }
    })();
  }
}
