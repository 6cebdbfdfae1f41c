import type { FastifyInstance } from 'fastify';
import type { ApiOperation } from './operation.js';

/** A route as Fastify registered it, with the operation it declared. */
export interface DocumentedRoute {
  method: string;
  /** Fastify's url, e.g. `/api/v1/users/:username`. */
  url: string;
  public: boolean;
  loginToken: boolean;
  operation: ApiOperation;
}

/**
 * Collects every route registered after it through an onRoute hook. A route without `config.operation` stops
 * start-up, so the document cannot silently miss one. HEAD routes are Fastify's automatic twins of GET.
 */
export class OperationRegistry {
  readonly routes: DocumentedRoute[] = [];

  constructor(app: FastifyInstance) {
    app.addHook('onRoute', (route) => {
      const methods = (Array.isArray(route.method) ? route.method : [route.method]).filter(
        (method) => method.toUpperCase() !== 'HEAD',
      );
      if (methods.length === 0) return;
      const config = route.config ?? {};
      if (!config.operation) {
        throw new Error(`${methods.join(',')} ${route.url} declares no OpenAPI operation (config.operation)`);
      }
      for (const method of methods) {
        this.routes.push({
          method: method.toUpperCase(),
          url: route.url,
          public: config.public === true,
          loginToken: config.loginToken === true,
          operation: config.operation,
        });
      }
    });
  }
}
