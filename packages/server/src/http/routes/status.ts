import type { FastifyInstance } from 'fastify';
import type { StatusData } from '@svc/protocol';

export function statusRoutes(app: FastifyInstance, getStatus: () => Promise<StatusData>): void {
  app.get('/status', async () => ({ data: await getStatus() }));
}
