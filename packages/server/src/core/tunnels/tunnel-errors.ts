import { AppError, ERROR_CODES } from '@svc/protocol';
import type { PortPool } from './port-pool.js';
import type { TunnelTarget } from './ports.js';

/** The errors of the tunnel API, each with its kind (→ status) and stable code. */
export const tunnelErrors = {
  notConnected: (clientId: string, detail = 'tunnels need a connected client') =>
    new AppError(
      'not_found',
      ERROR_CODES.clientNotConnected,
      `Client '${clientId}' is not connected`,
      detail,
    ),
  gone: (clientId: string) =>
    tunnelErrors.notConnected(clientId, 'the client disconnected while the tunnel was being opened'),
  exists: (target: TunnelTarget, id: string | undefined) =>
    new AppError(
      'conflict',
      ERROR_CODES.tunnelExists,
      `A tunnel to ${target.host}:${target.port} with the same acl already exists`,
      id === undefined
        ? 'another request is opening it; give another acl for a second tunnel'
        : `it is tunnel ${id}; delete it first or give another acl`,
    ),
  notFound: (clientId: string, tunnelId: string) =>
    new AppError(
      'not_found',
      ERROR_CODES.tunnelNotFound,
      `Tunnel '${tunnelId}' of client '${clientId}' not found`,
    ),
  busy: (tunnelId: string, active: number) =>
    new AppError(
      'conflict',
      ERROR_CODES.tunnelBusy,
      `Tunnel '${tunnelId}' has ${active} active connection(s)`,
      'add force=true to close it anyway',
    ),
  portNotAllowed: (port: number, pool: PortPool) =>
    new AppError(
      'invalid',
      ERROR_CODES.localPortNotAllowed,
      `Local port ${port} is not among the allowed ports`,
      `tunnels listen on [server] used_ports minus excluded_ports: ${pool.describe()}`,
    ),
  portInUse: (port: number) =>
    new AppError(
      'conflict',
      ERROR_CODES.localPortInUse,
      `Local port ${port} is already in use`,
      'leave local out to get a free port',
    ),
  portKept: (port: number, holder: { clientId: string; id: number }) =>
    new AppError(
      'conflict',
      ERROR_CODES.localPortInUse,
      `Local port ${port} is already in use`,
      `stored tunnel ${holder.id} of client '${holder.clientId}' gets it back when its client reconnects; ` +
        'leave local out to get a free port',
    ),
  noFreePort: (pool: PortPool, attempts: number) =>
    new AppError(
      'conflict',
      ERROR_CODES.noFreePort,
      'No free local port for the tunnel',
      `ports ${pool.describe()} ([server] used_ports minus excluded_ports): ` +
        (attempts === 0 ? 'every one is used by a tunnel' : `${attempts} tried, all in use`),
    ),
  badLocalHost: (host: string, detail: string) =>
    new AppError('invalid', ERROR_CODES.invalidQuery, `Cannot listen on local ${host}`, detail),
  listenFailed: (detail: string) =>
    new AppError('conflict', ERROR_CODES.tunnelFailed, 'Unable to start the tunnel listener', detail),
  remotePortClosed: (target: TunnelTarget, error: string | undefined) =>
    new AppError(
      'conflict',
      ERROR_CODES.remotePortClosed,
      `Port ${target.port} on ${target.host} is not accepting connections on the client`,
      `${error ?? 'closed'}; add check_port=false to open the tunnel anyway`,
    ),
  notAllowed: (target: TunnelTarget) =>
    new AppError(
      'conflict',
      ERROR_CODES.tunnelNotAllowed,
      `Tunnel destination ${target.host}:${target.port} is not allowed by the client's tunnel_allowed`,
      'the client refused it; change [client] tunnel_allowed on the client to permit it',
    ),
  agentFailed: (detail: string) =>
    new AppError('conflict', ERROR_CODES.tunnelFailed, 'The client could not open the tunnel', detail),
};
