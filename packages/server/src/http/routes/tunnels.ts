import { hostname } from 'node:os';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { applyListQuery, parseListQuery, tunnelOverviewSchema, tunnelSchema } from '@svc/protocol';
import { z } from 'zod';
import { parseTunnelRequest } from '../../core/tunnels/tunnel-request.js';
import type { TunnelsService } from '../../core/tunnels/tunnels-service.js';
import { accessOf } from '../access.js';
import { callerOf } from '../auth.js';
import { booleanParam } from '../query.js';
import { TUNNEL_LIST } from '../../core/tunnels/tunnel-list.js';
import {
  data,
  documented,
  empty,
  list,
  sparse,
  type ApiOperation,
  type QueryParameter,
} from '../openapi/operation.js';

type ClientParams = { Params: { id: string } };
type TunnelParams = { Params: { id: string; tunnelId: string } };

const text = (name: string, description: string): QueryParameter => ({
  name,
  description,
  schema: z.string(),
});
const FORCE = text('force', 'true: close it even while connections are open.');

const OPERATIONS = {
  list: {
    permission: 'tunnels',
    tag: 'tunnels',
    summary: 'List the tunnels of every connected client, with who opened them and their timers',
    description:
      'The tunnels of the clients connected to the answering svcd node; a tunnel waiting to be re-opened has `open: false`.',
    list: TUNNEL_LIST,
    responses: [list(sparse(tunnelOverviewSchema))],
  },
  open: {
    permission: 'tunnels',
    tag: 'tunnels',
    summary: 'Open a tunnel to a client (every parameter is in the query)',
    query: [
      text(
        'remote',
        'Target as seen from the client: port, or host:port (host defaults to 127.0.0.1). Required.',
      ),
      text('local', 'Server address to listen on: port or host:port; default a free port of the pool.'),
      text('acl', 'Comma-separated addresses and CIDRs allowed to connect; default anyone.'),
      text('idle-timeout-minutes', 'Close after this many idle minutes (default 5; 0 = never).'),
      text('skip-idle-timeout', 'true: never close for idleness.'),
      text('auto-close', 'Close this long after opening, e.g. 30m or 2h.'),
      text('check_port', 'false: do not check that the remote port answers first.'),
      text('scheme', 'URI scheme of the service behind it (ssh, rdp, http, …), for tunnel_url.'),
    ],
    responses: [data(tunnelSchema)],
  },
  delete: {
    permission: 'tunnels',
    tag: 'tunnels',
    summary: 'Close a tunnel',
    query: [FORCE],
    responses: [empty(204, 'Closed')],
  },
} satisfies Record<string, ApiOperation>;

const NUMERIC_FIELDS = new Set(['id', 'lport', 'rport']);

/** A host name, an IPv4 address or an IPv6 address (without brackets). */
const HOST = /^[A-Za-z0-9.:-]{1,253}$/;

/** The host the caller reached the API by (Host header, brackets of IPv6 removed); this machine's name if odd. */
function apiHostOf(request: FastifyRequest): string {
  const host = request.hostname.replace(/^\[(.*)\]$/, '$1');
  return HOST.test(host) ? host : hostname();
}

/** Tunnels on demand: every parameter is in the query string, no body (as in the reference system). */
export function tunnelRoutes(app: FastifyInstance, tunnels: TunnelsService): void {
  app.get('/tunnels', documented(OPERATIONS.list), async (request) => {
    const query = parseListQuery(request.query as Record<string, unknown>, TUNNEL_LIST);
    const scope = (await accessOf(request)).scope;
    const all = (await tunnels.overview(callerOf(request).user)).filter((t) => scope.has(t.client_id));
    // Ids and ports are strings on the wire (spec 2.12) but sort as numbers ("10" after "9").
    const { data, count } = applyListQuery(all, query, (item, field) =>
      NUMERIC_FIELDS.has(field) ? Number(item[field as keyof typeof item]) : item[field as keyof typeof item],
    );
    return { data, meta: { count } };
  });

  app.put<ClientParams>('/clients/:id/tunnels', documented(OPERATIONS.open), async (request) => {
    const caller = callerOf(request).user;
    const tunnel = parseTunnelRequest(request.query as Record<string, unknown>);
    (await accessOf(request)).assertTunnelOn(request.params.id, {
      scheme: tunnel.scheme,
      remotePort: tunnel.remote.port,
      acl: tunnel.acl,
    });
    return { data: await tunnels.open(caller, request.params.id, tunnel, apiHostOf(request)) };
  });

  app.delete<TunnelParams>(
    '/clients/:id/tunnels/:tunnelId',
    documented(OPERATIONS.delete),
    async (request, reply) => {
      const caller = callerOf(request).user;
      const force = booleanParam(request.query, 'force');
      (await accessOf(request)).assertClient(request.params.id);
      await tunnels.delete(caller, request.params.id, request.params.tunnelId, force);
      return reply.status(204).send();
    },
  );
}
