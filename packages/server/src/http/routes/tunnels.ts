import { hostname } from 'node:os';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseTunnelRequest } from '../../core/tunnels/tunnel-request.js';
import type { TunnelsService } from '../../core/tunnels/tunnels-service.js';
import { callerOf } from '../auth.js';
import { booleanParam } from '../query.js';

type ClientParams = { Params: { id: string } };
type TunnelParams = { Params: { id: string; tunnelId: string } };

/** A host name, an IPv4 address or an IPv6 address (without brackets). */
const HOST = /^[A-Za-z0-9.:-]{1,253}$/;

/** The host the caller reached the API by (Host header, brackets of IPv6 removed); this machine's name if odd. */
function apiHostOf(request: FastifyRequest): string {
  const host = request.hostname.replace(/^\[(.*)\]$/, '$1');
  return HOST.test(host) ? host : hostname();
}

/** Tunnels on demand: every parameter is in the query string, no body (as in the reference system). */
export function tunnelRoutes(app: FastifyInstance, tunnels: TunnelsService): void {
  app.put<ClientParams>('/clients/:id/tunnels', async (request) => {
    const caller = callerOf(request).user;
    const tunnel = parseTunnelRequest(request.query as Record<string, unknown>);
    return { data: await tunnels.open(caller, request.params.id, tunnel, apiHostOf(request)) };
  });

  app.delete<TunnelParams>('/clients/:id/tunnels/:tunnelId', async (request, reply) => {
    const caller = callerOf(request).user;
    const force = booleanParam(request.query, 'force');
    await tunnels.delete(caller, request.params.id, request.params.tunnelId, force);
    return reply.status(204).send();
  });
}
