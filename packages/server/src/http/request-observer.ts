import type { FastifyInstance } from 'fastify';

/** One answered API request, as monitoring sees it. */
export interface ServedRequest {
  method: string;
  /** The route's pattern (`/api/v1/clients/:client_id`), never the raw URL; `unmatched` when no route matched. */
  route: string;
  status: number;
  seconds: number;
}

export type RequestObserver = (request: ServedRequest) => void;

export const UNMATCHED_ROUTE = 'unmatched';

/** Tells `observe` about every response once it has gone out. */
export function observeRequests(app: FastifyInstance, observe: RequestObserver): void {
  app.addHook('onResponse', (request, reply, done) => {
    observe({
      method: request.method,
      route: request.routeOptions.url ?? UNMATCHED_ROUTE,
      status: reply.statusCode,
      seconds: reply.elapsedTime / 1000,
    });
    done();
  });
}
