import type { FastifyInstance } from 'fastify';
import {
  clientGroupPreviewBodySchema,
  clientGroupPreviewSchema,
  clientGroupSchema,
  createClientGroupBodySchema,
  parseListQuery,
  updateClientGroupBodySchema,
} from '@svc/protocol';
import { CLIENT_GROUP_ITEM, CLIENT_GROUP_LIST } from '../../core/client-groups/client-group-list.js';
import type { ClientGroupsService } from '../../core/client-groups/client-groups-service.js';
import { parseBody } from '../body.js';
import { data, documented, empty, list, sparse, type ApiOperation } from '../openapi/operation.js';

type Query = Record<string, unknown>;
type IdParams = { Params: { id: string } };

const OPERATIONS = {
  list: {
    tag: 'client-groups',
    summary: 'List client groups',
    list: CLIENT_GROUP_LIST,
    responses: [list(sparse(clientGroupSchema))],
  },
  get: {
    tag: 'client-groups',
    summary: 'One client group',
    list: CLIENT_GROUP_ITEM,
    responses: [data(sparse(clientGroupSchema))],
  },
  create: {
    permission: 'client-groups',
    tag: 'client-groups',
    summary: 'Create a client group',
    body: createClientGroupBodySchema,
    responses: [data(clientGroupSchema, 201, 'Created')],
  },
  update: {
    permission: 'client-groups',
    tag: 'client-groups',
    summary: 'Replace the description and params of a client group',
    body: updateClientGroupBodySchema,
    responses: [data(clientGroupSchema)],
  },
  preview: {
    tag: 'client-groups',
    summary: 'The clients a group with these params would hold (not saved)',
    body: clientGroupPreviewBodySchema,
    responses: [data(clientGroupPreviewSchema)],
  },
  delete: {
    permission: 'client-groups',
    tag: 'client-groups',
    summary: 'Delete a client group',
    responses: [empty(204, 'Deleted')],
  },
} satisfies Record<string, ApiOperation>;

/** Spec 4.11; any authenticated user. Writes answer with the group as GET shows it (members included). */
export function clientGroupRoutes(app: FastifyInstance, groups: ClientGroupsService): void {
  app.get('/client-groups', documented(OPERATIONS.list), async (request) => {
    const query = parseListQuery(request.query as Query, CLIENT_GROUP_LIST);
    const { data, count } = await groups.list(query);
    return { data, meta: { count } };
  });

  app.get<IdParams>('/client-groups/:id', documented(OPERATIONS.get), async (request) => {
    const { fields } = parseListQuery(request.query as Query, CLIENT_GROUP_ITEM);
    return { data: await groups.get(request.params.id, fields) };
  });

  app.post('/client-groups', documented(OPERATIONS.create), async (request, reply) => {
    const body = parseBody(createClientGroupBodySchema, request.body);
    return reply.status(201).send({ data: await groups.create(body) });
  });

  app.post('/client-groups-preview', documented(OPERATIONS.preview), (request) => {
    const { params } = parseBody(clientGroupPreviewBodySchema, request.body);
    return { data: groups.preview(params) };
  });

  app.put<IdParams>('/client-groups/:id', documented(OPERATIONS.update), async (request) => {
    const body = parseBody(updateClientGroupBodySchema, request.body);
    return { data: await groups.update(request.params.id, body) };
  });

  app.delete<IdParams>('/client-groups/:id', documented(OPERATIONS.delete), async (request, reply) => {
    await groups.delete(request.params.id);
    return reply.status(204).send();
  });
}
