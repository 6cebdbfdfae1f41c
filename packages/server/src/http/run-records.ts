/** HTTP side of run records: the CSV export of a run and the `only` parameter of a rerun. */
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ERROR_CODES, rerunSelectionSchema, type RerunSelection } from '@svc/protocol';

/** True when the request's Accept names text/csv (before any JSON type it may also list). */
export function wantsCsv(request: FastifyRequest): boolean {
  const accept = String(request.headers.accept ?? '').toLowerCase();
  const csv = accept.indexOf('text/csv');
  if (csv < 0) return false;
  const json = accept.indexOf('application/json');
  return json < 0 || csv < json;
}

/** Streams the lines as a CSV download named after the run. */
export function sendCsv(reply: FastifyReply, jid: string, lines: AsyncGenerator<string>): FastifyReply {
  const name = `run-${jid.replace(/[^A-Za-z0-9-]/g, '_')}.csv`;
  return reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="${name}"`)
    .header('cache-control', 'no-store')
    .send(Readable.from(lines));
}

/** `only` of POST /commands/{jid}/rerun: failed (default) or all; anything else is a 400 naming it. */
export function rerunSelection(query: unknown): RerunSelection {
  const raw = (query as Record<string, unknown> | undefined)?.only;
  if (raw === undefined || raw === '') return 'failed';
  const parsed = rerunSelectionSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  throw new AppError(
    'invalid',
    ERROR_CODES.invalidQuery,
    'only must be failed or all',
    `got ${JSON.stringify(raw)}`,
  );
}
