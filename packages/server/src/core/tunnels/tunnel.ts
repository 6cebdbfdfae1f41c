import type { ClientTunnel } from '../clients/client-record.js';
import type { TunnelAgent, TunnelHandle, TunnelTarget } from './ports.js';
import type { TunnelRequest } from './tunnel-request.js';
import { tunnelUrl } from './tunnel-url.js';

/** One tunnel definition (stored); `open` is set while it listens through a live connection of this node. */
export interface Tunnel {
  /** Per-client counter, never reused while the client has stored tunnels. */
  readonly id: string;
  readonly request: TunnelRequest;
  readonly lhost: string;
  /** 0 until a pool port is picked. */
  lport: number;
  /** Picked from the pool, so another pool port may be picked when it is taken at a re-open. */
  readonly lportRandom: boolean;
  readonly createdAt: Date;
  /** Epoch milliseconds of the auto-close; undefined = never. */
  readonly closeAt: number | undefined;
  /** Username of the creator. */
  readonly owner: string;
  /** The host name the creator reached the API by: the host of `tunnel_url` when nothing better is known. */
  readonly apiHost: string;
  open?: { agent: TunnelAgent; handle: TunnelHandle };
}

/** Two tunnels with the same key are duplicates: same target and same acl. */
export const duplicateKey = (r: TunnelRequest): string =>
  `${r.remote.host}:${r.remote.port}|${r.acl?.text ?? ''}`;

export const targetOf = (tunnel: Tunnel): TunnelTarget => tunnel.request.remote;

/**
 * The tunnel as the API shows it (ports as strings, spec 2.12). `publicHost` is the configured public host of
 * svcd (the first `[server] url`), if any; without it the creator's API host is used.
 */
export function tunnelView(tunnel: Tunnel, publicHost: string | undefined): ClientTunnel {
  const { request } = tunnel;
  return {
    id: tunnel.id,
    lhost: tunnel.lhost,
    lport: String(tunnel.lport),
    rhost: request.remote.host,
    rport: String(request.remote.port),
    scheme: request.scheme,
    acl: request.acl?.text ?? null,
    idle_timeout_minutes: request.idleTimeoutMinutes,
    auto_close: request.autoCloseMs === undefined ? null : request.autoCloseMs / 1000,
    tunnel_url: tunnelUrl(request.scheme, tunnel.lhost, tunnel.lport, publicHost ?? tunnel.apiHost),
    created_at: tunnel.createdAt.toISOString(),
  };
}
