import type { FastifyInstance } from 'fastify';
import { parseListQuery } from '@svc/protocol';
import { CLIENT_ITEM, CLIENT_LIST } from '../../core/clients/client-list.js';
import type { ClientsService } from '../../core/clients/clients-service.js';

type Query = Record<string, unknown>;

/** Spec 4.12 with the DESIGN decisions: wrapped list with the list grammar, one client, delete. Any user. */
export function clientRoutes(app: FastifyInstance, clients: ClientsService): void {
  app.get('/clients', async (request) => {
    const query = parseListQuery(request.query as Query, CLIENT_LIST);
    const { data, count } = await clients.list(query);
    return { data, meta: { count } };
  });

  app.get<{ Params: { id: string } }>('/clients/:id', async (request) => {
    const { fields } = parseListQuery(request.query as Query, CLIENT_ITEM);
    return { data: await clients.get(request.params.id, fields) };
  });

  app.delete<{ Params: { id: string } }>('/clients/:id', async (request, reply) => {
    await clients.delete(request.params.id);
    return reply.status(204).send();
  });
}
