import type { FastifyInstance } from 'fastify';
import { AppError, ERROR_CODES, auditRecordSchema, parseListQuery, pickFields } from '@svc/protocol';
import { z } from 'zod';
import { AUDIT_EXPORT, AUDIT_LIST } from '../../core/audit/audit-list.js';
import type { AuditService } from '../../core/audit/audit-service.js';
import { documented, list, sparse, type ApiOperation } from '../openapi/operation.js';
import { Readable } from 'node:stream';
import { wantsCsv } from '../run-records.js';

const LIST: ApiOperation = {
  tag: 'auditlog',
  summary: 'The audit log',
  description:
    'Every write through the API, run, tunnel, login (success and failure), 2FA event, vault secret read, refusal ' +
    'and agent connect/disconnect, newest first. Filter with filter[username], filter[action], filter[client_id], ' +
    'filter[timestamp]=2026-05-01 (a period), since= and until= (RFC 3339 times); with `Accept: text/csv` every matching record is exported as CSV ' +
    '(the same filters and sort, no paging). Records cannot be changed or deleted through the API.',
  list: AUDIT_LIST,
  query: [
    { name: 'since', description: 'Only records at or after this RFC 3339 time', schema: z.string() },
    { name: 'until', description: 'Only records before this RFC 3339 time', schema: z.string() },
  ],
  permission: 'auditlog',
  responses: [
    list(sparse(auditRecordSchema)),
    { status: 200, description: 'The records as CSV', body: z.string(), contentType: 'text/csv' },
  ],
};

type Query = Record<string, unknown>;

function timeParam(query: Query, name: string): Date | undefined {
  const raw = query[name];
  if (raw === undefined || raw === '') return undefined;
  const time = typeof raw === 'string' && RFC3339.test(raw) ? new Date(raw) : undefined;
  if (time && !Number.isNaN(time.getTime())) return time;
  throw new AppError(
    'invalid',
    ERROR_CODES.invalidQuery,
    `${name} must be an RFC 3339 time`,
    `got ${JSON.stringify(raw)}; e.g. 2026-05-01T10:30:00Z`,
  );
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:[Zz]|[+-]\d{2}:\d{2})?)?$/;

const rangeOf = (query: Query) => ({ since: timeParam(query, 'since'), until: timeParam(query, 'until') });

export function auditLogRoutes(app: FastifyInstance, audit: AuditService): void {
  app.get('/auditlog', documented(LIST), async (request, reply) => {
    if (wantsCsv(request)) {
      const query = parseListQuery(request.query as Query, AUDIT_EXPORT);
      const lines = audit.export(query, rangeOf(request.query as Query));
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', 'attachment; filename="auditlog.csv"')
        .header('cache-control', 'no-store')
        .send(Readable.from(lines));
    }
    const query = parseListQuery(request.query as Query, AUDIT_LIST);
    const { data, count } = await audit.list(query, rangeOf(request.query as Query));
    return { data: data.map((r) => pickFields(r, query.fields)), meta: { count } };
  });
}
