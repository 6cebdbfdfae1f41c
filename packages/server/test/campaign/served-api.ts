/**
 * What the hardening campaign learns from a running svcd: the operations of the OpenAPI document it serves, and
 * the checks every answer must pass whatever was asked (no 5xx, no stack trace or file path, errors enveloped).
 */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { errorBodySchema } from '@svc/protocol';

export interface OpenApiParameter {
  name: string;
  in: 'path' | 'query';
  schema?: Record<string, unknown>;
}

export interface OpenApiOperation {
  summary: string;
  description?: string;
  /** `administrators` when only members of Administrators may call it. */
  'x-svc-access'?: string;
  /** The named permission a caller outside Administrators needs. */
  'x-svc-permission'?: string;
  security?: Record<string, string[]>[];
  parameters?: OpenApiParameter[];
  requestBody?: { content: { 'application/json': { schema: JsonSchema } } };
}

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  additionalProperties?: boolean | JsonSchema;
  default?: unknown;
}

export interface ServedOperation {
  method: string;
  /** As the document names it, e.g. `/api/v1/users/{username}`. */
  path: string;
  operation: OpenApiOperation;
}

export interface ServedDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
}

/** GET /api/v1/openapi.json through the app, and every operation in it. */
export async function servedOperations(app: FastifyInstance): Promise<ServedOperation[]> {
  const res = await app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
  expect(res.statusCode).toBe(200);
  const doc = res.json<ServedDocument>();
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
  );
}

/** The path with each `{name}` replaced by `fill(name)` (already encoded by the caller if it must be). */
export const concretePath = (path: string, fill: (name: string) => string = () => 'x'): string =>
  path.replace(/\{([^}]+)\}/g, (_m, name: string) => fill(name));

export const label = (op: ServedOperation): string => `${op.method} ${op.path}`;

/** The document's own declaration of who may call an operation. */
export const isPublic = (op: ServedOperation): boolean => op.operation.security?.length === 0;
export const isBasicOnly = (op: ServedOperation): boolean =>
  op.operation.security?.length === 1 && op.operation.security[0]?.basicAuth !== undefined;
export const acceptsLoginToken = (op: ServedOperation): boolean =>
  (op.operation.description ?? '').includes('login token of a two-factor login');
export const isAdministratorsOnly = (op: ServedOperation): boolean =>
  op.operation['x-svc-access'] === 'administrators';
export const permissionOf = (op: ServedOperation): string | undefined => op.operation['x-svc-permission'];

/** A stack frame, an absolute path of this machine or a Node internal: none may reach an API answer. */
const LEAKS: readonly RegExp[] = [
  /\bat [\w$.<>]+ \(/, // "at fn (file:line)"
  /\bat (?:file|node):/,
  /(?:^|["'\s(=])\/(?:home|root|tmp|work|usr|var|etc|opt|proc)\/[\w.-]/,
  /node_modules/,
  /\.(?:ts|js):\d+/,
  /\b(?:TypeError|ReferenceError|RangeError|SyntaxError):/,
  /FST_ERR_/,
  /SQLITE_|\bER_[A-Z]{3,}|\bpg_|relation ".*" does not exist/,
];

export function leakIn(text: string): RegExp | undefined {
  return LEAKS.find((pattern) => pattern.test(text));
}

export interface Answer {
  status: number;
  contentType: string;
  body: string;
}

export const answerOf = (res: LightMyRequestResponse): Answer => ({
  status: res.statusCode,
  contentType: String(res.headers['content-type'] ?? ''),
  body: res.body,
});

/**
 * The campaign's invariant for one answer: below 500, nothing of the server's insides, and every 4xx in the
 * error envelope. Returns what is wrong, or undefined.
 */
export function violation(answer: Answer, echoed: readonly string[] = []): string | undefined {
  if (answer.status >= 500) return `status ${answer.status}: ${answer.body.slice(0, 300)}`;
  // What the request itself sent may come back in a message (e.g. "no client x"); only the rest is checked.
  const own = echoed.reduce((text, sent) => (sent ? text.split(sent).join('') : text), answer.body);
  const leak = leakIn(own);
  if (leak) return `leaks ${leak.source}: ${answer.body.slice(0, 300)}`;
  if (answer.status >= 400) {
    if (!answer.contentType.startsWith('application/json'))
      return `${answer.status} as ${answer.contentType}`;
    let parsed: unknown;
    try {
      parsed = JSON.parse(answer.body);
    } catch {
      return `${answer.status} body is not JSON: ${answer.body.slice(0, 200)}`;
    }
    const envelope = errorBodySchema.strict().safeParse(parsed);
    if (!envelope.success) return `${answer.status} outside the error envelope: ${answer.body.slice(0, 200)}`;
  }
  return undefined;
}
