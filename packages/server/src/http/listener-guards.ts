import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { AppError, ERROR_CODES } from '@svc/protocol';
import { formatDuration } from '@svc/platform';
import { LogThrottle } from '../core/log-throttle.js';
import { answerClientError, type ClientError } from './malformed-request.js';
import { capConnections, type ListenerLimits } from './server-limits.js';

/** Malformed or too slow requests: answered in our shape by Node's 'clientError', logged at debug. */
export function apiClientErrorHandler(limits: ListenerLimits, log: FastifyBaseLogger) {
  const hint = {
    timeoutDetail:
      `send the headers within ${formatDuration(limits.headerTimeoutMs)} and the whole request within ` +
      `${formatDuration(limits.requestTimeoutMs)} ([api] read_header_timeout, read_timeout)`,
  };
  return (err: ClientError, socket: Socket): void => {
    const answered = answerClientError(err, socket, hint);
    if (answered)
      log.debug({ ip: socket.remoteAddress, code: answered.code, cause: err.code }, answered.message);
  };
}

const DROP_LOG_INTERVAL_MS = 60_000;

/** `[api] max_connections`; refusals are logged at most once a minute, with how many were held back. */
export function limitConnections(app: FastifyInstance, maxConnections: number): void {
  const throttle = new LogThrottle(DROP_LOG_INTERVAL_MS, 1);
  capConnections(app.server, maxConnections, () => {
    const heldBack = throttle.admit('api');
    if (heldBack === undefined) return;
    app.log.warn(
      { max_connections: maxConnections, refused_before: heldBack },
      'API connection refused: [api] max_connections are open',
    );
  });
}

/** Requests that arrive while svcd shuts down get 503 in our shape (Fastify adds Connection: close). */
export function refuseWhileClosing(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', (_request, _reply, done) => {
    if (!closing) return done();
    done(new AppError('unavailable', ERROR_CODES.shuttingDown, 'svcd is shutting down', 'retry in a moment'));
  });
}

/**
 * HTTP/1.1 requires a Host header. Node would refuse a request without one by itself, with an empty body; the
 * listener lets it through (`requireHostHeader: false`) so that it is refused here, in our shape.
 */
export function requireHostHeader(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.raw.httpVersion !== '1.1' || request.headers.host !== undefined) return done();
    done(
      new AppError(
        'invalid',
        ERROR_CODES.malformedHttp,
        'Missing Host header',
        'HTTP/1.1 requests must send a Host header',
      ),
    );
  });
}
