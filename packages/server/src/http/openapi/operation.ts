/**
 * What a route tells the OpenAPI document about itself. Method, path and authentication come from the route as
 * Fastify registered it (its url and `config.public` / `config.loginToken`); the rest is declared here, next to
 * the handler, with the same zod schemas the handler validates with.
 */
import { z } from 'zod';
import type { ListSpec, Permission } from '@svc/protocol';

export interface ApiResponse {
  status: number;
  description: string;
  /** The whole JSON body (envelope included); absent = no body. */
  body?: z.ZodType;
  /** Default `application/json`. */
  contentType?: string;
}

export interface QueryParameter {
  name: string;
  description: string;
  schema: z.ZodType;
}

export interface ApiOperation {
  /** Groups operations in the document and on the docs page. */
  tag: string;
  summary: string;
  description?: string;
  /** The schema the handler passes to parseBody. */
  body?: z.ZodType;
  /** The list grammar the handler passes to parseListQuery: sort, filter[…], fields[…], page[…]. */
  list?: ListSpec;
  /** Further query parameters. */
  query?: readonly QueryParameter[];
  /** Successful answers; errors are `{errors:[…]}` for every operation. */
  responses: readonly ApiResponse[];
  /** Public routes that still check credentials themselves (GET /login takes Basic only). */
  security?: 'basic';
  /** Who may call it once authenticated: every user (default) or only members of Administrators (core checks it). */
  access?: 'administrators';
  /**
   * The named permission a caller outside Administrators needs (issue 28); the permission hook checks it after
   * authentication and the document shows it as `x-svc-permission`. Absent: none needed.
   */
  permission?: Permission;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's entry in the OpenAPI document; every route under /api must have one. */
    operation?: ApiOperation;
  }
}

/** Route options declaring the operation (and any further config such as `public`). */
export const documented = (
  operation: ApiOperation,
  config: { public?: boolean; loginToken?: boolean } = {},
) => ({
  config: { ...config, operation },
});

const countMeta = z.object({ count: z.number().int() });

/** `{data}` with the given status (200 by default). */
export function data(schema: z.ZodType, status = 200, description = 'OK'): ApiResponse {
  return { status, description, body: z.object({ data: schema }) };
}

/** `{data, meta}` for answers that say more about the data, e.g. that a change waits for a reload. */
export function dataWithMeta(
  schema: z.ZodType,
  meta: z.ZodType,
  status = 200,
  description = 'OK',
): ApiResponse {
  return { status, description, body: z.object({ data: schema, meta }) };
}

/** `{data: [...], meta: {count}}`: count is the total before paging. */
export function list(
  item: z.ZodType,
  description = 'OK; meta.count is the number of matches before paging',
): ApiResponse {
  return { status: 200, description, body: z.object({ data: z.array(item), meta: countMeta }) };
}

export function empty(status: 201 | 204, description: string): ApiResponse {
  return { status, description };
}

/**
 * An item whose fields a sparse fieldset (`fields[resource]=…`) may leave out: every field is listed but none is
 * required, so the document holds for any selection.
 */
export function sparse<S extends z.ZodObject>(schema: S) {
  return schema.partial().describe('Every field unless fields[…] selects some.');
}
