import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { AppError, ERROR_CODES } from '@svc/protocol';
import { formatDuration } from '@svc/platform';
import { answerClientError, type ClientError } from './malformed-request.js';
import type { ListenerLimits } from './server-limits.js';

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

/**
 * A response sent before its request has fully arrived (401 before the body, 413, 429) ends the connection:
 * otherwise Node would keep reading the rest of the body for a request already answered, holding the socket until
 * `read_timeout` and then answering it a second time (408).
 */
export function closeAfterEarlyAnswer(app: FastifyInstance): void {
  app.addHook('onSend', (request, reply, payload, done) => {
    if (!request.raw.complete) reply.header('connection', 'close');
    done(null, payload);
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
