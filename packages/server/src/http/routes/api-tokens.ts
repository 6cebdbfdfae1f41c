import type { FastifyInstance } from 'fastify';
import { createApiTokenBodySchema, updateApiTokenBodySchema } from '@svc/protocol';
import type { ApiTokensService } from '../../core/api-tokens/api-tokens-service.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';

type PrefixParams = { Params: { prefix: string } };

/** The caller's personal API tokens (spec 2.3). */
export function apiTokenRoutes(app: FastifyInstance, tokens: ApiTokensService): void {
  app.get('/me/tokens', async (request) => {
    const data = await tokens.list(callerOf(request).user);
    return { data, meta: { count: data.length } };
  });

  app.post('/me/tokens', async (request, reply) => {
    const body = parseBody(createApiTokenBodySchema, request.body);
    const data = await tokens.create(callerOf(request).user, body);
    return reply.status(201).send({ data });
  });

  app.put<PrefixParams>('/me/tokens/:prefix', async (request) => {
    const body = parseBody(updateApiTokenBodySchema, request.body);
    const data = await tokens.update(callerOf(request).user, request.params.prefix, body);
    return { data };
  });

  app.delete<PrefixParams>('/me/tokens/:prefix', async (request, reply) => {
    await tokens.delete(callerOf(request).user, request.params.prefix);
    return reply.status(204).send();
  });
}
