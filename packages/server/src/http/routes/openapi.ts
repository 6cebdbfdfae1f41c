import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { SVCD_VERSION } from '../../version.js';
import { buildOpenApiDocument } from '../openapi/document.js';
import { documented, type ApiOperation } from '../openapi/operation.js';
import type { OperationRegistry } from '../openapi/registry.js';
import { DOCS_PAGE } from '../openapi/docs-page.js';

const OPENAPI_JSON: ApiOperation = {
  tag: 'documentation',
  summary: 'This OpenAPI 3.1 document',
  responses: [{ status: 200, description: 'OK', body: z.looseObject({ openapi: z.string() }) }],
};

const DOCS: ApiOperation = {
  tag: 'documentation',
  summary: 'A page listing the operations of openapi.json with their schemas ([api] docs)',
  responses: [{ status: 200, description: 'OK', body: z.string(), contentType: 'text/html' }],
};

/**
 * GET /openapi.json (always) and GET /docs (when `[api] docs`), both public: the document describes the API, not
 * its data. The document is built once, when the server is ready and every route is known.
 */
export function openApiRoutes(
  app: FastifyInstance,
  registry: OperationRegistry,
  options: { docs: boolean },
): void {
  let document: string | undefined;
  app.addHook('onReady', (done) => {
    document = JSON.stringify(buildOpenApiDocument(registry.routes, SVCD_VERSION));
    done();
  });
  app.get('/openapi.json', documented(OPENAPI_JSON, { public: true }), async (_request, reply) =>
    reply.type('application/json; charset=utf-8').send(document),
  );
  if (options.docs) {
    app.get('/docs', documented(DOCS, { public: true }), async (_request, reply) =>
      reply.type('text/html; charset=utf-8').send(DOCS_PAGE),
    );
  }
}
