import type { FastifyInstance } from 'fastify';
import {
  createLibraryScriptBodySchema,
  libraryScriptSchema,
  parseListQuery,
  pickFields,
  replaceLibraryScriptBodySchema,
} from '@svc/protocol';
import { LIBRARY_SCRIPT_ITEM, LIBRARY_SCRIPT_LIST } from '../../core/library/library-list.js';
import type { LibraryService } from '../../core/library/library-service.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';
import { data, documented, empty, list, sparse, type ApiOperation } from '../openapi/operation.js';

type Query = Record<string, unknown>;
type ScriptParams = { Params: { id: string } };

const OPERATIONS = {
  create: {
    permission: 'library',
    tag: 'library',
    summary: 'Add a script to the library',
    body: createLibraryScriptBodySchema,
    responses: [data(libraryScriptSchema, 201, 'Created')],
  },
  list: {
    permission: 'scripts',
    tag: 'library',
    summary: 'List library scripts',
    list: LIBRARY_SCRIPT_LIST,
    responses: [list(sparse(libraryScriptSchema))],
  },
  get: {
    permission: 'scripts',
    tag: 'library',
    summary: 'One library script',
    list: LIBRARY_SCRIPT_ITEM,
    responses: [data(sparse(libraryScriptSchema))],
  },
  replace: {
    permission: 'library',
    tag: 'library',
    summary: 'Replace a library script',
    body: replaceLibraryScriptBodySchema,
    responses: [data(libraryScriptSchema)],
  },
  delete: {
    permission: 'library',
    tag: 'library',
    summary: 'Delete a library script',
    responses: [empty(204, 'Deleted')],
  },
} satisfies Record<string, ApiOperation>;

/** Spec 4.4: the script library, open to every authenticated user. */
export function libraryRoutes(app: FastifyInstance, library: LibraryService): void {
  app.post('/library/scripts', documented(OPERATIONS.create), async (request, reply) => {
    const body = parseBody(createLibraryScriptBodySchema, request.body);
    const data = await library.create(body, callerOf(request).user.username);
    return reply.status(201).send({ data });
  });

  app.get('/library/scripts', documented(OPERATIONS.list), async (request) => {
    const query = parseListQuery(request.query as Query, LIBRARY_SCRIPT_LIST);
    const { data, count } = await library.list(query);
    return { data: data.map((script) => pickFields(script, query.fields)), meta: { count } };
  });

  app.get<ScriptParams>('/library/scripts/:id', documented(OPERATIONS.get), async (request) => {
    const { fields } = parseListQuery(request.query as Query, LIBRARY_SCRIPT_ITEM);
    return { data: pickFields(await library.get(request.params.id), fields) };
  });

  app.put<ScriptParams>('/library/scripts/:id', documented(OPERATIONS.replace), async (request) => {
    const body = parseBody(replaceLibraryScriptBodySchema, request.body);
    return { data: await library.replace(request.params.id, body, callerOf(request).user.username) };
  });

  app.delete<ScriptParams>('/library/scripts/:id', documented(OPERATIONS.delete), async (request, reply) => {
    await library.delete(request.params.id);
    return reply.status(204).send();
  });
}
