import type { FastifyInstance } from 'fastify';
import { createClientGroupBodySchema, parseListQuery, updateClientGroupBodySchema } from '@svc/protocol';
import { CLIENT_GROUP_ITEM, CLIENT_GROUP_LIST } from '../../core/client-groups/client-group-list.js';
import type { ClientGroupsService } from '../../core/client-groups/client-groups-service.js';
import { parseBody } from '../body.js';

type Query = Record<string, unknown>;
type IdParams = { Params: { id: string } };

/** Spec 4.11; any authenticated user. Writes answer with the group as GET shows it (members included). */
export function clientGroupRoutes(app: FastifyInstance, groups: ClientGroupsService): void {
  app.get('/client-groups', async (request) => {
    const query = parseListQuery(request.query as Query, CLIENT_GROUP_LIST);
    const { data, count } = await groups.list(query);
    return { data, meta: { count } };
  });

  app.get<IdParams>('/client-groups/:id', async (request) => {
    const { fields } = parseListQuery(request.query as Query, CLIENT_GROUP_ITEM);
    return { data: await groups.get(request.params.id, fields) };
  });

  app.post('/client-groups', async (request, reply) => {
    const body = parseBody(createClientGroupBodySchema, request.body);
    return reply.status(201).send({ data: await groups.create(body) });
  });

  app.put<IdParams>('/client-groups/:id', async (request) => {
    const body = parseBody(updateClientGroupBodySchema, request.body);
    return { data: await groups.update(request.params.id, body) };
  });

  app.delete<IdParams>('/client-groups/:id', async (request, reply) => {
    await groups.delete(request.params.id);
    return reply.status(204).send();
  });
}
