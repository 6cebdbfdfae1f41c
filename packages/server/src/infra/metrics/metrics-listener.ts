import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { ERROR_CODES } from '@svc/protocol';
import type { Logger } from '@svc/platform';
import { sendError } from '../../http/raw-reply.js';
import { splitHostPort } from '../address.js';
import { DescriptorExhaustionLog, keepAccepting } from '../descriptor-exhaustion.js';

export const METRICS_PATH = '/metrics';

/** A scraper sends one small request every few seconds; anything slower than this is not one. */
const REQUEST_TIMEOUT_MS = 10_000;
/** Scrapers keep their connection between scrapes (default interval 15 s..1 min). */
const KEEP_ALIVE_MS = 65_000;
/** Connections at once: one or two Prometheus servers need a handful. */
const MAX_CONNECTIONS = 32;

export interface MetricsListener {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` (Prometheus text format) on an address of its own, without authentication: never the
 * API's listener, so the metrics cannot be exposed with the API by accident. Anything else gets 404 or 405.
 */
export async function startMetricsListener(
  address: string,
  registry: Registry,
  log: Logger,
): Promise<MetricsListener> {
  const server = createServer(
    {
      requestTimeout: REQUEST_TIMEOUT_MS,
      headersTimeout: REQUEST_TIMEOUT_MS,
      keepAliveTimeout: KEEP_ALIVE_MS,
    },
    (req, res) => void answer(req, res, registry, log),
  );
  server.maxConnections = MAX_CONNECTIONS;
  const { host, port } = splitHostPort(address);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  keepAccepting(server, 'metrics listener', new DescriptorExhaustionLog(log), log);
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function answer(req: IncomingMessage, res: ServerResponse, registry: Registry, log: Logger) {
  const path = (req.url ?? '').split('?')[0];
  if (path !== METRICS_PATH) {
    return sendError(res, {
      status: 404,
      code: ERROR_CODES.routeNotFound,
      title: `Not found: this listener serves only GET ${METRICS_PATH}`,
    });
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    return sendError(res, {
      status: 405,
      code: ERROR_CODES.methodNotAllowed,
      title: `Method ${req.method ?? ''} not allowed: use GET ${METRICS_PATH}`,
      headers: { allow: 'GET, HEAD' },
    });
  }
  try {
    const body = await registry.metrics();
    res.writeHead(200, {
      'content-type': registry.contentType,
      'content-length': Buffer.byteLength(body),
      'cache-control': 'no-store',
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  } catch (err) {
    log.error({ err }, 'collecting the metrics failed');
    sendError(res, { status: 500, code: ERROR_CODES.internal, title: 'Collecting the metrics failed' });
  }
}
