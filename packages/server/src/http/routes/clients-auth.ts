import type { FastifyInstance } from 'fastify';
import { createClientAuthBodySchema, parseListQuery, type ListSpec } from '@svc/protocol';
import type { ClientsAuthService } from '../../core/clients-auth/clients-auth-service.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';
import { booleanParam } from '../query.js';

const CLIENTS_AUTH_LIST: ListSpec = {
  resource: 'clients_auth',
  sortable: ['id'],
  defaultSort: 'id',
  filterable: ['id'],
  fields: ['id', 'password'],
  pagination: { defaultLimit: 50, maxLimit: 500 },
};

type IdParams = { Params: { id: string } };

export function clientsAuthRoutes(app: FastifyInstance, service: ClientsAuthService): void {
  app.get('/clients-auth', async (request) => {
    const caller = callerOf(request).user;
    const query = parseListQuery(request.query as Record<string, unknown>, CLIENTS_AUTH_LIST);
    const { data, count } = await service.list(caller, query);
    return { data, meta: { count } };
  });

  app.get<IdParams>('/clients-auth/:id', async (request) => ({
    data: await service.get(callerOf(request).user, request.params.id),
  }));

  app.post('/clients-auth', async (request, reply) => {
    const caller = callerOf(request).user;
    service.assertMayWrite(caller);
    const body = parseBody(createClientAuthBodySchema, request.body);
    await service.create(caller, body);
    return reply.status(201).send({ data: { id: body.id } });
  });

  app.delete<IdParams>('/clients-auth/:id', async (request, reply) => {
    const force = booleanParam(request.query, 'force');
    await service.delete(callerOf(request).user, request.params.id, force);
    return reply.status(204).send();
  });
}
