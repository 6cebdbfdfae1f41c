import type { FastifyInstance } from 'fastify';
import {
  apiTokenItemSchema,
  createApiTokenBodySchema,
  createdApiTokenSchema,
  updateApiTokenBodySchema,
} from '@svc/protocol';
import type { ApiTokensService } from '../../core/api-tokens/api-tokens-service.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';
import { data, documented, empty, list, type ApiOperation } from '../openapi/operation.js';

type PrefixParams = { Params: { prefix: string } };

const OPERATIONS = {
  list: { tag: 'tokens', summary: "List the caller's API tokens", responses: [list(apiTokenItemSchema)] },
  create: {
    tag: 'tokens',
    summary: 'Create an API token',
    description:
      '`token` is the HTTP Basic password to use with the username; it is shown only in this answer.',
    body: createApiTokenBodySchema,
    responses: [data(createdApiTokenSchema, 201, 'Created')],
  },
  update: {
    tag: 'tokens',
    summary: 'Rename an API token or change its expiry',
    body: updateApiTokenBodySchema,
    responses: [data(apiTokenItemSchema)],
  },
  delete: { tag: 'tokens', summary: 'Revoke an API token', responses: [empty(204, 'Revoked')] },
} satisfies Record<string, ApiOperation>;

/** The caller's personal API tokens (spec 2.3). */
export function apiTokenRoutes(app: FastifyInstance, tokens: ApiTokensService): void {
  app.get('/me/tokens', documented(OPERATIONS.list), async (request) => {
    const data = await tokens.list(callerOf(request).user);
    return { data, meta: { count: data.length } };
  });

  app.post('/me/tokens', documented(OPERATIONS.create), async (request, reply) => {
    const body = parseBody(createApiTokenBodySchema, request.body);
    const data = await tokens.create(callerOf(request).user, body);
    return reply.status(201).send({ data });
  });

  app.put<PrefixParams>('/me/tokens/:prefix', documented(OPERATIONS.update), async (request) => {
    const body = parseBody(updateApiTokenBodySchema, request.body);
    const data = await tokens.update(callerOf(request).user, request.params.prefix, body);
    return { data };
  });

  app.delete<PrefixParams>('/me/tokens/:prefix', documented(OPERATIONS.delete), async (request, reply) => {
    await tokens.delete(callerOf(request).user, request.params.prefix);
    return reply.status(204).send();
  });
}
