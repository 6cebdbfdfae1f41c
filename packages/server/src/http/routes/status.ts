import type { FastifyInstance } from 'fastify';
import { statusDataSchema, type StatusData } from '@svc/protocol';
import { data, documented } from '../openapi/operation.js';

const STATUS = { tag: 'status', summary: 'Server status', responses: [data(statusDataSchema)] };

export function statusRoutes(app: FastifyInstance, getStatus: () => Promise<StatusData>): void {
  app.get('/status', documented(STATUS), async () => ({ data: await getStatus() }));
}
