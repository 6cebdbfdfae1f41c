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
  /** Epoch milliseconds at which the idle timeout closes it; undefined while in use or without a timeout. */
  readonly idleCloseAt?: number | undefined;
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

/** A tunnel definition as stored: what re-creates it when its client returns, after a restart or on another node. */
export interface StoredTunnel {
  clientId: string;
  /** Per-client counter. */
  id: number;
  lhost: string;
  /** The port it listened on last. */
  lport: number;
  /** The port was picked from the pool (may move to another pool port); false: the caller asked for it. */
  lportRandom: boolean;
  rhost: string;
  rport: number;
  acl: string | null;
  /** 0 = never. */
  idleTimeoutMinutes: number;
  /** The requested auto-close duration; null = never. */
  autoCloseMs: number | null;
  /** Epoch milliseconds of the auto-close (creation + duration), so a restart does not extend it; null = never. */
  closeAt: number | null;
  scheme: string | null;
  /** Username of the creator. */
  owner: string;
  /** The host name the creator reached the API by (for tunnel_url). */
  apiHost: string;
  /** Epoch milliseconds. */
  createdAt: number;
}

/** A stored tunnel's listen port. */
export interface StoredPort {
  clientId: string;
  id: number;
  lport: number;
}

/**
 * The stored tunnel definitions: the truth for which tunnels should exist. The live listeners are the business
 * of the node holding the client's connection. A client's definitions go when the client record is deleted.
 */
export interface TunnelRepository {
  listByClient(clientId: string): Promise<StoredTunnel[]>;
  /** Which of these clients have stored tunnels. */
  clientsWithTunnels(clientIds: readonly string[]): Promise<Set<string>>;
  /** The listen ports of every stored tunnel, so new tunnels leave them to the tunnels that will want them back. */
  listPorts(): Promise<StoredPort[]>;
  insert(tunnel: StoredTunnel): Promise<void>;
  /** Records the pool port a tunnel moved to. */
  updatePort(clientId: string, id: number, lport: number): Promise<void>;
  delete(clientId: string, id: number): Promise<boolean>;
}
