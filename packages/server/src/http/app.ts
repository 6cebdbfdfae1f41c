import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { AppError, ERROR_CODES, type StatusData } from '@svc/protocol';
import { formatDuration } from '@svc/platform';
import { LogThrottle } from '../core/log-throttle.js';
import type { Authenticator } from '../core/auth/authenticator.js';
import type { ClientsAuthService } from '../core/clients-auth/clients-auth-service.js';
import type { ClientsService } from '../core/clients/clients-service.js';
import type { TunnelsService } from '../core/tunnels/tunnels-service.js';
import type { UsersService } from '../core/users/users-service.js';
import { registerAuthHook } from './auth.js';
import { registerErrorHandlers, sendAppError } from './errors.js';
import { registerJsonBody } from './json-body.js';
import { answerClientError, type ClientError } from './malformed-request.js';
import { RouteMethods } from './route-methods.js';
import { capConnections, listenerServerOptions, type ListenerLimits } from './server-limits.js';
import { clientsAuthRoutes } from './routes/clients-auth.js';
import { clientRoutes } from './routes/clients.js';
import { loginRoutes } from './routes/login.js';
import { statusRoutes } from './routes/status.js';
import { tunnelRoutes } from './routes/tunnels.js';
import { userRoutes } from './routes/users.js';

export interface ApiDeps {
  auth: Authenticator;
  users: UsersService;
  clientsAuth: ClientsAuthService;
  clients: ClientsService;
  tunnels: TunnelsService;
  getStatus: () => Promise<StatusData>;
  logger: FastifyBaseLogger;
  /** Log each request at debug level; off unless the level is debug, so the hooks cost nothing otherwise. */
  logRequests: boolean;
  maxRequestBytes: number;
  /** `[api] read_header_timeout`, `read_timeout`, `idle_timeout`, `max_connections`. */
  limits: ListenerLimits;
}

export const API_PREFIX = '/api/v1';

export async function buildApi(deps: ApiDeps): Promise<FastifyInstance> {
  const { limits } = deps;
  const timeoutHint = {
    timeoutDetail:
      `send the headers within ${formatDuration(limits.headerTimeoutMs)} and the whole request within ` +
      `${formatDuration(limits.requestTimeoutMs)} ([api] read_header_timeout, read_timeout)`,
  };
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit: deps.maxRequestBytes,
    // Per-request lines go out at debug level from the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true }),
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // Fastify's own 503 has its own shape; the onRequest hook below answers with ours.
    return503OnClosing: false,
    http: listenerServerOptions(limits),
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.idleTimeoutMs,
    clientErrorHandler(err: ClientError, socket) {
      const answered = answerClientError(err, socket, timeoutHint);
      if (answered) deps.logger.debug({ ip: socket.remoteAddress, code: answered.code }, answered.message);
    },
    frameworkErrors: (err, request, reply) => sendAppError(request, reply, err),
  });
  limitConnections(app, limits.maxConnections);
  refuseWhileClosing(app);
  if (deps.logRequests) registerRequestLogging(app);
  // Only JSON bodies are accepted; other content types get a clear 400 instead of being read as text.
  app.removeContentTypeParser('text/plain');
  registerJsonBody(app);
  registerErrorHandlers(app, new RouteMethods(app));
  await app.register(
    (api, _options, done) => {
      registerAuthHook(api, deps.auth);
      statusRoutes(api, deps.getStatus);
      loginRoutes(api, deps.auth);
      userRoutes(api, deps.users);
      clientsAuthRoutes(api, deps.clientsAuth);
      clientRoutes(api, deps.clients);
      tunnelRoutes(api, deps.tunnels);
      done();
    },
    { prefix: API_PREFIX },
  );
  return app;
}

const DROP_LOG_INTERVAL_MS = 60_000;

/** `[api] max_connections`; refusals are logged at most once a minute, with how many there were. */
function limitConnections(app: FastifyInstance, maxConnections: number): void {
  const throttle = new LogThrottle(DROP_LOG_INTERVAL_MS, 1);
  capConnections(app.server, maxConnections, () => {
    const suppressed = throttle.admit('api');
    if (suppressed === undefined) return;
    app.log.warn(
      { max_connections: maxConnections, refused_before: suppressed },
      'API connection refused: [api] max_connections are open',
    );
  });
}

/** Requests that arrive while svcd shuts down get 503 in our shape (Fastify adds Connection: close). */
function refuseWhileClosing(app: FastifyInstance): void {
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

/** Debug-level lines when a request arrives and when its response has gone out. */
function registerRequestLogging(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    request.log.debug({ method: request.method, url: request.url }, 'request received');
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    request.log.debug(
      { method: request.method, url: request.url, status: reply.statusCode, ms: reply.elapsedTime },
      'request',
    );
    done();
  });
}
