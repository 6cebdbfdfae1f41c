import type { FastifyInstance } from 'fastify';
import { createSavedViewBodySchema, savedViewSchema, updateSavedViewBodySchema } from '@svc/protocol';
import type { SavedViewsService } from '../../core/saved-views/saved-views-service.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';
import { data, documented, empty, list, type ApiOperation } from '../openapi/operation.js';

type IdParams = { Params: { id: string } };

const OPERATIONS = {
  list: {
    tag: 'views',
    summary: "List the caller's saved views (console pages' named filters, columns and sort)",
    responses: [list(savedViewSchema)],
  },
  get: { tag: 'views', summary: 'Read a saved view', responses: [data(savedViewSchema)] },
  create: {
    tag: 'views',
    summary: 'Save a view',
    description:
      '`search` is the page\'s URL query string (without "?"); names are unique per user; at most 200 views.',
    body: createSavedViewBodySchema,
    responses: [data(savedViewSchema, 201, 'Created')],
  },
  update: {
    tag: 'views',
    summary: 'Rename a saved view or change its filter, columns or sort',
    body: updateSavedViewBodySchema,
    responses: [data(savedViewSchema)],
  },
  delete: { tag: 'views', summary: 'Delete a saved view', responses: [empty(204, 'Deleted')] },
} satisfies Record<string, ApiOperation>;

/** The caller's saved views of console pages. */
export function savedViewRoutes(app: FastifyInstance, views: SavedViewsService): void {
  app.get('/me/views', documented(OPERATIONS.list), async (request) => {
    const data = await views.list(callerOf(request).user);
    return { data, meta: { count: data.length } };
  });

  app.get<IdParams>('/me/views/:id', documented(OPERATIONS.get), async (request) => ({
    data: await views.get(callerOf(request).user, request.params.id),
  }));

  app.post('/me/views', documented(OPERATIONS.create), async (request, reply) => {
    const body = parseBody(createSavedViewBodySchema, request.body);
    const data = await views.create(callerOf(request).user, body);
    return reply.status(201).send({ data });
  });

  app.put<IdParams>('/me/views/:id', documented(OPERATIONS.update), async (request) => {
    const body = parseBody(updateSavedViewBodySchema, request.body);
    return { data: await views.update(callerOf(request).user, request.params.id, body) };
  });

  app.delete<IdParams>('/me/views/:id', documented(OPERATIONS.delete), async (request, reply) => {
    await views.delete(callerOf(request).user, request.params.id);
    return reply.status(204).send();
  });
}
