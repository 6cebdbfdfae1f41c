import type { ClientTunnel } from '../clients/client-record.js';
import type { TunnelAgent, TunnelHandle, TunnelTarget } from './ports.js';
import type { TunnelRequest } from './tunnel-request.js';

/** One tunnel definition; `open` is set while it listens through a live connection. */
export interface Tunnel {
  /** Per-client counter, never reused within a client. */
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
  open?: { agent: TunnelAgent; handle: TunnelHandle };
}

/** Two tunnels with the same key are duplicates: same target and same acl. */
export const duplicateKey = (r: TunnelRequest): string =>
  `${r.remote.host}:${r.remote.port}|${r.acl?.text ?? ''}`;

export const targetOf = (tunnel: Tunnel): TunnelTarget => tunnel.request.remote;

/** The tunnel as the API shows it (ports as strings, spec 2.12). */
export function tunnelView(tunnel: Tunnel): ClientTunnel {
  const { request } = tunnel;
  return {
    id: tunnel.id,
    lhost: tunnel.lhost,
    lport: String(tunnel.lport),
    rhost: request.remote.host,
    rport: String(request.remote.port),
    acl: request.acl?.text ?? null,
    idle_timeout_minutes: request.idleTimeoutMinutes,
    auto_close: request.autoCloseMs === undefined ? null : request.autoCloseMs / 1000,
    created_at: tunnel.createdAt.toISOString(),
  };
}
