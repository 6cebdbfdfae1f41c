import { z } from 'zod';
import { errorBodySchema } from '@svc/protocol';
import { listParameters } from './list-parameters.js';
import type { ApiResponse } from './operation.js';
import type { DocumentedRoute } from './registry.js';

type JsonObject = Record<string, unknown>;

/** JSON Schema (draft 2020-12, as OpenAPI 3.1 uses) of what a request may send or a response holds. */
export function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonObject {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' });
  return rest;
}

const ERRORS_REF = { $ref: '#/components/schemas/Errors' };

/** `/api/v1/users/:username` → `/api/v1/users/{username}`. */
export const openApiPath = (url: string): string => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

const pathParameterNames = (url: string): string[] =>
  [...url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1] ?? '');

/** One response object per status; answers that share a status (e.g. with or without meta) become anyOf. */
function responseObjects(responses: readonly ApiResponse[]): JsonObject {
  const byStatus = new Map<number, ApiResponse[]>();
  for (const response of responses)
    byStatus.set(response.status, [...(byStatus.get(response.status) ?? []), response]);
  const objects: JsonObject = {};
  for (const [status, alike] of byStatus) {
    const description = alike.map((r) => r.description).join('; or: ');
    // One entry per media type (e.g. JSON, or CSV when the request's Accept asks for it).
    const content: JsonObject = {};
    for (const type of new Set(alike.filter((r) => r.body).map((r) => r.contentType ?? 'application/json'))) {
      const schemas = alike
        .filter((r) => r.body && (r.contentType ?? 'application/json') === type)
        .map((r) => jsonSchemaOf(r.body as z.ZodType, 'output'));
      content[type] = { schema: schemas.length === 1 ? schemas[0] : { anyOf: schemas } };
    }
    objects[String(status)] = Object.keys(content).length === 0 ? { description } : { description, content };
  }
  return objects;
}

function security(route: DocumentedRoute): JsonObject[] | undefined {
  if (route.operation.security === 'basic') return [{ basicAuth: [] }];
  if (route.public) return [];
  return undefined; // the document's default: Basic or Bearer
}

function operationObject(route: DocumentedRoute): JsonObject {
  const op = route.operation;
  const parameters = [
    ...pathParameterNames(route.url).map((name) => ({
      name,
      in: 'path',
      required: true,
      schema: { type: 'string' },
    })),
    ...(op.list ? listParameters(op.list) : []),
    ...(op.query ?? []).map((q) => ({
      name: q.name,
      in: 'query',
      description: q.description,
      schema: jsonSchemaOf(q.schema, 'input'),
    })),
  ];
  const responses = responseObjects(op.responses);
  responses.default = {
    description: 'An error: 4xx for a request to fix, 5xx for a server problem',
    content: { 'application/json': { schema: ERRORS_REF } },
  };
  const loginTokenNote = route.loginToken
    ? 'Also accepts the login token of a two-factor login as Bearer token.'
    : undefined;
  const description = [op.description, loginTokenNote].filter(Boolean).join('\n\n');
  const auth = security(route);
  return {
    tags: [op.tag],
    summary: op.summary,
    ...(description ? { description } : {}),
    ...(auth ? { security: auth } : {}),
    ...(op.access ? { 'x-svc-access': op.access } : {}),
    ...(op.permission ? { 'x-svc-permission': op.permission } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body
      ? {
          requestBody: {
            required: true,
            content: { 'application/json': { schema: jsonSchemaOf(op.body, 'input') } },
          },
        }
      : {}),
    responses,
  };
}

/** The OpenAPI 3.1 document of the given routes, paths sorted. */
export function buildOpenApiDocument(routes: readonly DocumentedRoute[], version: string): JsonObject {
  const paths: Record<string, JsonObject> = {};
  const sorted = [...routes].sort((a, b) => a.url.localeCompare(b.url) || a.method.localeCompare(b.method));
  for (const route of sorted) {
    const path = (paths[openApiPath(route.url)] ??= {});
    path[route.method.toLowerCase()] = operationObject(route);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'svcd API',
      version,
      description:
        'Management API of svcd. Successful answers are `{data}` or `{data, meta}`; every error is ' +
        '`{"errors":[{code,title,detail}]}`. Authenticate with HTTP Basic (password or personal API token) ' +
        'or a Bearer token from GET /api/v1/login.',
    },
    paths,
    components: {
      schemas: { Errors: jsonSchemaOf(errorBodySchema, 'output') },
      securitySchemes: {
        basicAuth: { type: 'http', scheme: 'basic' },
        bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      },
    },
    security: [{ basicAuth: [] }, { bearerAuth: [] }],
  };
}
