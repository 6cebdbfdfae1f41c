import type { ServerOptions } from 'node:http';
import type { Server } from 'node:net';

/** How long a client may take at each stage of a request, and how many connections a listener keeps open. */
export interface ListenerLimits {
  /** Request line and headers. */
  headerTimeoutMs: number;
  /** The whole request, body included; at least `headerTimeoutMs`. */
  requestTimeoutMs: number;
  /** A keep-alive connection waiting for its next request. */
  idleTimeoutMs: number;
  /** Open connections at most; 0 = no limit. */
  maxConnections: number;
  /** Open connections per address at most (the API's `max_connections_per_address`); 0 or unset = no share. */
  maxConnectionsPerAddress?: number;
}

/**
 * Node checks the header and request timeouts on a timer (every 30 s by default), so a 2 s timeout could fire up to
 * 30 s late; checking every second (or twice per timeout, when shorter) keeps them on time for little work.
 */
export const timeoutCheckIntervalMs = (limits: ListenerLimits): number =>
  Math.max(10, Math.min(1000, Math.floor(Math.min(limits.headerTimeoutMs, limits.requestTimeoutMs) / 2)));

/**
 * Options for `http.createServer` that enforce the timeouts. Node's own answer to a request without Host is an
 * empty 400; turned off so that the listener can refuse it in its own shape (or, for agents, not care).
 */
export function listenerServerOptions(limits: ListenerLimits): ServerOptions {
  return {
    requireHostHeader: false,
    headersTimeout: limits.headerTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.idleTimeoutMs,
    connectionsCheckingInterval: timeoutCheckIntervalMs(limits),
  };
}

/**
 * Caps the open connections: Node closes each further one as soon as it is accepted, before reading from it.
 * `onRefused` runs for each one so the caller can log.
 */
export function capConnections(server: Server, maxConnections: number, onRefused: () => void): void {
  if (maxConnections <= 0) return;
  server.maxConnections = maxConnections;
  server.on('drop', onRefused);
}
