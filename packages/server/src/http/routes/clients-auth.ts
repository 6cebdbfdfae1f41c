import type { FastifyInstance } from 'fastify';
import {
  clientCredentialSchema,
  createClientAuthBodySchema,
  parseListQuery,
  type ListSpec,
} from '@svc/protocol';
import { z } from 'zod';
import type { ClientsAuthService } from '../../core/clients-auth/clients-auth-service.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';
import { booleanParam } from '../query.js';
import { data, documented, empty, list, sparse, type ApiOperation } from '../openapi/operation.js';

const CLIENTS_AUTH_LIST: ListSpec = {
  resource: 'clients_auth',
  sortable: ['id'],
  defaultSort: 'id',
  filterable: ['id'],
  fields: ['id', 'password'],
  pagination: { defaultLimit: 50, maxLimit: 500 },
};

const ADMINS_ONLY = 'Administrators only.';

type IdParams = { Params: { id: string } };

const OPERATIONS = {
  list: {
    tag: 'clients-auth',
    summary: 'List client credentials',
    access: 'administrators',
    description: ADMINS_ONLY,
    list: CLIENTS_AUTH_LIST,
    responses: [list(sparse(clientCredentialSchema))],
  },
  get: {
    tag: 'clients-auth',
    summary: 'One client credential',
    access: 'administrators',
    description: ADMINS_ONLY,
    responses: [data(clientCredentialSchema)],
  },
  create: {
    tag: 'clients-auth',
    summary: 'Add a client credential',
    access: 'administrators',
    description: 'Administrators only, and only when [server] auth_write allows it.',
    body: createClientAuthBodySchema,
    responses: [data(clientCredentialSchema.pick({ id: true }), 201, 'Created')],
  },
  delete: {
    tag: 'clients-auth',
    summary: 'Delete a client credential',
    access: 'administrators',
    description: 'Administrators only, and only when [server] auth_write allows it.',
    query: [
      {
        name: 'force',
        description: 'true: also when clients are connected with it (they are disconnected).',
        schema: z.enum(['true', 'false', '1', '0']),
      },
    ],
    responses: [empty(204, 'Deleted')],
  },
} satisfies Record<string, ApiOperation>;

export function clientsAuthRoutes(app: FastifyInstance, service: ClientsAuthService): void {
  app.get('/clients-auth', documented(OPERATIONS.list), async (request) => {
    const caller = callerOf(request).user;
    const query = parseListQuery(request.query as Record<string, unknown>, CLIENTS_AUTH_LIST);
    const { data, count } = await service.list(caller, query);
    return { data, meta: { count } };
  });

  app.get<IdParams>('/clients-auth/:id', documented(OPERATIONS.get), async (request) => ({
    data: await service.get(callerOf(request).user, request.params.id),
  }));

  app.post('/clients-auth', documented(OPERATIONS.create), async (request, reply) => {
    const caller = callerOf(request).user;
    service.assertMayWrite(caller);
    const body = parseBody(createClientAuthBodySchema, request.body);
    await service.create(caller, body);
    return reply.status(201).send({ data: { id: body.id } });
  });

  app.delete<IdParams>('/clients-auth/:id', documented(OPERATIONS.delete), async (request, reply) => {
    const force = booleanParam(request.query, 'force');
    await service.delete(callerOf(request).user, request.params.id, force);
    return reply.status(204).send();
  });
}
