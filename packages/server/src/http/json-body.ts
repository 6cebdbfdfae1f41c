import type { FastifyInstance } from 'fastify';

/**
 * JSON bodies, where an empty body counts as no body: many HTTP clients send `Content-Type: application/json` on
 * every request, DELETE included. A route that needs a body still answers "Missing body" (see parseBody).
 * Prototype and constructor poisoning stay errors, as in Fastify's own parser.
 */
export function registerJsonBody(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.length === 0) {
      done(null, undefined);
      return;
    }
    void parseJson(request, text, done);
  });
}
