/**
 * Records the audited API requests into the audit log from `onResponse`, after the answer went out: every
 * request that is not a GET, the logins (GET /login), reads of a vault secret or TOTP secret, every refusal
 * (403) and every failed authentication that presented credentials (401). Reads are not audited otherwise.
 * The record only joins the audit log's in-memory queue: no database round trip on the request path.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { auditKindOf } from '../core/audit/audit-actions.js';
import type { AuditLog } from '../core/audit/audit-log.js';
import { bodyEssentials, compactJson, queryEssentials } from '../core/audit/request-essentials.js';
import type { AuditOutcome } from '@svc/protocol';

const AUDITED_READS = new Set(['/login', '/vault/:id', '/me/totp-secret']);

declare module 'fastify' {
  interface FastifyRequest {
    /** What the answer said that the audit record keeps: a created id, an error code. */
    auditNote: { id?: string; code?: string } | undefined;
  }
}

const ID_IN_ANSWER = /"(?:jid|id|prefix)":(?:"([^"]{1,255})"|(\d{1,20}))/;
const CODE_IN_ANSWER = /"code":"([^"]{1,100})"/;

function basicUsername(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (!header?.toLowerCase().startsWith('basic ')) return '';
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? '' : decoded.slice(0, colon);
}

function isAudited(method: string, route: string, status: number, hasCredentials: boolean): boolean {
  if (status === 403) return true;
  if (status === 401) return hasCredentials || method !== 'GET';
  if (method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS') return true;
  return AUDITED_READS.has(route);
}

export interface AuditHookOptions {
  /** The API prefixes routes are registered under (stripped from the route pattern). */
  prefixes: readonly string[];
  /** The host name of a client, for the record. */
  hostnameOf: (clientId: string) => string | undefined;
}

export function auditRequests(app: FastifyInstance, audit: AuditLog, options: AuditHookOptions): void {
  app.decorateRequest('auditNote', undefined);
  app.addHook('onSend', (request, reply, payload, done) => {
    const status = reply.statusCode;
    if (
      typeof payload === 'string' &&
      payload.length < 65_536 &&
      (request.method !== 'GET' || status >= 400)
    ) {
      const match = (status >= 400 ? CODE_IN_ANSWER : ID_IN_ANSWER).exec(payload);
      const found = match?.[1] ?? match?.[2];
      if (found) request.auditNote = status >= 400 ? { code: found } : { id: found };
    }
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    const pattern = request.routeOptions.url;
    const status = reply.statusCode;
    const prefix = options.prefixes.find((p) => (pattern ?? request.url).startsWith(`${p}/`));
    if (prefix === undefined) return done();
    const route = (pattern ?? request.url.split('?')[0] ?? '').slice(prefix.length);
    if (!isAudited(request.method, route, status, request.headers.authorization !== undefined)) return done();
    const ok = status < 400;
    const outcome: AuditOutcome = ok ? 'success' : status === 401 || status === 403 ? 'refused' : 'failure';
    const kind =
      status === 401 && !request.caller && route !== '/login'
        ? { application: 'auth.user', action: 'failed' }
        : auditKindOf(request.method, route, ok);
    const params = (request.params ?? {}) as Record<string, string>;
    const body = request.body as Record<string, unknown> | undefined;
    const bodyClient = typeof body?.client_id === 'string' ? body.client_id : undefined;
    const clientId = route.startsWith('/clients/:id') ? (params.id ?? '') : (bodyClient ?? '');
    const paramValues = Object.values(params);
    const affected = paramValues.at(-1) ?? request.auditNote?.id ?? '';
    audit.record({
      timestamp: new Date(),
      username: request.caller?.user.username ?? basicUsername(request),
      remote_ip: request.ip,
      application: kind.application,
      action: kind.action,
      outcome,
      affected_id: affected,
      client_id: clientId,
      client_hostname: clientId ? (options.hostnameOf(clientId) ?? '') : '',
      request: compactJson({
        method: request.method,
        route: pattern ? route : undefined,
        params: paramValues.length > 0 ? params : undefined,
        query: queryEssentials(request.query),
        body: bodyEssentials(request.body),
      }),
      response: compactJson({
        status,
        ...(request.auditNote ?? {}),
        ...(request.missingPermission ? { permission: request.missingPermission } : {}),
      }),
    });
    done();
  });
}
