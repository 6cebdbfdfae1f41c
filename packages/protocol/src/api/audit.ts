import { z } from 'zod';

/** How an audited event ended: done, failed (4xx/5xx other than a refusal), or refused for lack of rights. */
export const AUDIT_OUTCOMES = ['success', 'failure', 'refused'] as const;
export type AuditOutcome = (typeof AUDIT_OUTCOMES)[number];

/**
 * One audit record (GET /auditlog), in OpenRPort's shape plus `outcome`. `request` and `response` are JSON text
 * of the request's essentials (never a password or secret value) and of the answer's status.
 */
export const auditRecordSchema = z.object({
  timestamp: z.string().describe('RFC 3339 time of the event'),
  username: z.string().describe('Who did it; empty when unknown (a refused login names the attempted user)'),
  remote_ip: z.string(),
  application: z.string().describe('e.g. auth.user, client.command, client.tunnel, vault, client'),
  action: z.string().describe('e.g. create, update, delete, execute.start, read, success, failed, connect'),
  outcome: z.enum(AUDIT_OUTCOMES),
  affected_id: z.string(),
  client_id: z.string(),
  client_hostname: z.string(),
  request: z.string().describe('JSON: method, route, params, query and allowed body fields'),
  response: z.string().describe('JSON: status and error code when refused or failed'),
});
export type AuditRecordData = z.infer<typeof auditRecordSchema>;

export const AUDIT_FIELDS = Object.keys(auditRecordSchema.shape) as (keyof AuditRecordData)[];
