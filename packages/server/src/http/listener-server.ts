import { createServer as createHttpServer, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { ListenerLimits } from './server-limits.js';
import { listenerServerOptions } from './server-limits.js';
import type { ListenerTls } from '../infra/listener-tls.js';

/**
 * The HTTP server of a listener, with its timeouts; over TLS when `tls` is given. The TLS handshake gets the
 * header timeout too, so a peer that connects and stays silent is dropped as early as on plain HTTP.
 */
export function createListenerServer(
  limits: ListenerLimits,
  tls: ListenerTls | undefined,
  handler?: RequestListener,
): Server {
  const options = listenerServerOptions(limits);
  if (!tls) return createHttpServer(options, handler);
  return createHttpsServer(
    {
      ...options,
      cert: tls.cert,
      key: tls.key,
      minVersion: tls.minVersion,
      handshakeTimeout: limits.headerTimeoutMs,
    },
    handler,
  );
}
