import type { FastifyInstance } from 'fastify';
import { clientItemSchema, listedClientSchema, parseListQuery } from '@svc/protocol';
import { CLIENT_ITEM, CLIENT_LIST } from '../../core/clients/client-list.js';
import type { ClientsService } from '../../core/clients/clients-service.js';
import { accessOf } from '../access.js';

import { data, documented, empty, list, sparse, type ApiOperation } from '../openapi/operation.js';

type Query = Record<string, unknown>;

const OPERATIONS = {
  list: {
    tag: 'clients',
    summary: 'List clients',
    list: CLIENT_LIST,
    responses: [list(sparse(listedClientSchema))],
  },
  get: {
    tag: 'clients',
    summary: 'One client, with the ids of its client groups',
    list: CLIENT_ITEM,
    responses: [data(sparse(clientItemSchema))],
  },
  delete: {
    permission: 'clients',
    tag: 'clients',
    summary: 'Forget a disconnected client',
    responses: [empty(204, 'Deleted')],
  },
} satisfies Record<string, ApiOperation>;

/** Spec 4.12 with the DESIGN decisions: wrapped list with the list grammar, one client, delete. Any user. */
export function clientRoutes(app: FastifyInstance, clients: ClientsService): void {
  app.get('/clients', documented(OPERATIONS.list), async (request) => {
    const query = parseListQuery(request.query as Query, CLIENT_LIST);
    const { data, count } = await clients.list(query, (await accessOf(request)).scope);
    return { data, meta: { count } };
  });

  app.get<{ Params: { id: string } }>('/clients/:id', documented(OPERATIONS.get), async (request) => {
    const { fields } = parseListQuery(request.query as Query, CLIENT_ITEM);
    (await accessOf(request)).assertClient(request.params.id);
    return { data: await clients.get(request.params.id, fields) };
  });

  app.delete<{ Params: { id: string } }>(
    '/clients/:id',
    documented(OPERATIONS.delete),
    async (request, reply) => {
      (await accessOf(request)).assertClient(request.params.id);
      await clients.delete(request.params.id);
      return reply.status(204).send();
    },
  );
}
