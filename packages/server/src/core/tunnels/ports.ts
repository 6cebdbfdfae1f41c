import type { Acl } from './acl.js';

/** A tunnel target as the client sees it. */
export interface TunnelTarget {
  host: string;
  port: number;
}

/** What a listener needs to serve one tunnel on this server. */
export interface ListenSpec {
  host: string;
  port: number;
  acl: Acl | undefined;
  /** Close the tunnel after this long without an open connection; undefined = never. */
  idleMs: number | undefined;
  /** Epoch milliseconds at which the tunnel closes whatever happens; undefined = never. */
  closeAt: number | undefined;
  target: TunnelTarget;
  /** For log lines. */
  clientId: string;
  tunnelId: string;
}

export type ExpiryReason = 'idle timeout' | 'auto-close';

/** A listening tunnel. */
export interface TunnelHandle {
  readonly port: number;
  /** TCP connections currently relayed. */
  readonly activeConnections: number;
  /** Stops listening and cuts the open connections. */
  close(): Promise<void>;
}

/** Why the agent side of a tunnel failed: refused by tunnel_allowed, connection gone, or anything else. */
export class TunnelAgentError extends Error {
  constructor(
    readonly reason: 'not_allowed' | 'gone' | 'failed',
    message: string,
  ) {
    super(message);
    this.name = 'TunnelAgentError';
  }
}

/** Why a listener could not start. */
export class ListenError extends Error {
  constructor(
    readonly reason: 'in_use' | 'bad_address' | 'failed',
    message: string,
  ) {
    super(message);
    this.name = 'ListenError';
  }
}

/** Tunnels through one live agent connection. Failures reject with TunnelAgentError or ListenError. */
export interface TunnelAgent {
  /** Does the agent's tunnel_allowed permit the target? */
  allowed(target: TunnelTarget): Promise<boolean>;
  /** Can the agent open a TCP connection to the target within `timeoutMs`? */
  checkPort(target: TunnelTarget, timeoutMs: number): Promise<{ open: boolean; error?: string }>;
  /** Makes the agent ready to relay connections to the target (counted). */
  forward(target: TunnelTarget): Promise<void>;
  /** Undoes one forward(). */
  unforward(target: TunnelTarget): Promise<void>;
  /** Listens on this server and relays each accepted connection to the target through the agent. */
  listen(spec: ListenSpec, onExpired: (reason: ExpiryReason) => void): Promise<TunnelHandle>;
}
