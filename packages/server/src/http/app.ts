import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { StatusData } from '@svc/protocol';
import type { Authenticator } from '../core/auth/authenticator.js';
import type { ClientGroupsService } from '../core/client-groups/client-groups-service.js';
import type { ClientsAuthService } from '../core/clients-auth/clients-auth-service.js';
import type { ClientsService } from '../core/clients/clients-service.js';
import type { JobsService } from '../core/jobs/jobs-service.js';
import type { LibraryService } from '../core/library/library-service.js';
import type { MultiJobsService } from '../core/jobs/multi-jobs-service.js';
import type { SchedulesService } from '../core/schedules/schedules-service.js';
import type { TunnelsService } from '../core/tunnels/tunnels-service.js';
import type { UsersService } from '../core/users/users-service.js';
import type { TotpSecretsService } from '../core/two-factor/totp-secrets-service.js';
import type { TwoFactorService } from '../core/two-factor/two-factor-service.js';
import type { MeService } from '../core/users/me-service.js';
import type { ApiTokensService } from '../core/api-tokens/api-tokens-service.js';
import type { SavedViewsService } from '../core/saved-views/saved-views-service.js';
import type { VaultService } from '../core/vault/vault-service.js';
import { registerAccess } from './access.js';
import { registerAuthHook } from './auth.js';
import { registerPermissionHook } from './permission-hook.js';
import type { Permissions } from '../core/permissions/permissions.js';
import type { UserGroupsService } from '../core/permissions/user-groups-service.js';
import { userGroupRoutes } from './routes/user-groups.js';
import { registerErrorHandlers, sendAppError } from './errors.js';
import { serveStaticUi, type SpaFallback, type StaticUi } from './static-ui.js';
import { registerJsonBody } from './json-body.js';
import { refuseConnectMethod } from './connect-method.js';
import {
  apiClientErrorHandler,
  closeAfterEarlyAnswer,
  refuseWhileClosing,
  requireHostHeader,
} from './listener-guards.js';
import { requestShareOf, shareConnections, shareRequests } from './address-shares.js';
import { RouteMethods } from './route-methods.js';
import { observeRequests, type RequestObserver } from './request-observer.js';
import { createListenerServer } from './listener-server.js';
import type { ListenerLimits } from './server-limits.js';
import type { ListenerTls } from '../infra/listener-tls.js';
import { clientGroupRoutes } from './routes/client-groups.js';
import { clientsAuthRoutes } from './routes/clients-auth.js';
import { clientRoutes } from './routes/clients.js';
import { commandRoutes } from './routes/commands.js';
import { libraryRoutes } from './routes/library.js';
import { multiCommandRoutes, multiScriptRoute } from './routes/multi-commands.js';
import { scheduleRoutes } from './routes/schedules.js';
import { alertRoutes } from './routes/alerts.js';
import type { AlertsService } from '../core/alerts/alerts-service.js';
import { openApiRoutes } from './routes/openapi.js';
import { OperationRegistry } from './openapi/registry.js';
import { wsTestPageRoutes } from './routes/ws-test-page.js';
import { serveJobSockets } from './ws/job-sockets.js';
import { loginRoutes, type DelegatedAuth } from './routes/login.js';
import { meRoutes } from './routes/me.js';
import { apiTokenRoutes } from './routes/api-tokens.js';
import { savedViewRoutes } from './routes/saved-views.js';
import { statusRoutes } from './routes/status.js';
import { tunnelRoutes } from './routes/tunnels.js';
import { twoFactorRoutes } from './routes/two-factor.js';
import { userRoutes } from './routes/users.js';
import { vaultAdminRoutes } from './routes/vault-admin.js';
import { vaultRoutes } from './routes/vault.js';
import { auditLogRoutes } from './routes/auditlog.js';
import { auditRequests } from './audit-hook.js';
import type { AuditLog } from '../core/audit/audit-log.js';
import type { AccessControl } from '../core/access/access-control.js';
import type { AuditService } from '../core/audit/audit-service.js';

export interface ApiDeps {
  auth: Authenticator;
  /** Two-factor login, when configured; the TOTP routes answer 400 unless totp_enabled. */
  secondFactor?: { login?: TwoFactorService | undefined; totp: TotpSecretsService };
  users: UsersService;
  me: MeService;
  /** The named permissions of issue 28, checked for every route that declares one. */
  permissions: Permissions;
  userGroups: UserGroupsService;
  apiTokens: ApiTokensService;
  savedViews: SavedViewsService;
  /** Set when `[api] auth_header` enables delegated authentication. */
  delegated?: DelegatedAuth;
  clientsAuth: ClientsAuthService;
  clients: ClientsService;
  clientGroups: ClientGroupsService;
  tunnels: TunnelsService;
  jobs: JobsService;
  library: LibraryService;
  vault: VaultService;
  multiJobs: MultiJobsService;
  schedules: SchedulesService;
  alerts: AlertsService;
  /** Client scopes and command/tunnel restrictions of user groups (issue 28); every user unlimited without. */
  access?: AccessControl | undefined;
  /** GET /auditlog; `log` (when `[audit] enabled`) records the audited requests. */
  audit: {
    service: AuditService;
    log: AuditLog | undefined;
    hostnameOf: (clientId: string) => string | undefined;
  };
  /** `enable_ws_test_endpoints`: serve GET /test/scripts/ui. */
  wsTestPage: boolean;
  /** `[api] docs`: serve the page GET /docs (GET /openapi.json is always served). */
  docs: boolean;
  /** The web console, or `[api] doc_root`'s UI, served at `/`; nothing there when undefined. */
  ui?: StaticUi | undefined;
  getStatus: () => Promise<StatusData>;
  logger: FastifyBaseLogger;
  /** Log each request at debug level; off unless the level is debug, so the hooks cost nothing otherwise. */
  logRequests: boolean;
  /** Told about every answered request (metrics). */
  observeRequest?: RequestObserver | undefined;
  maxRequestBytes: number;
  /** `[api] read_header_timeout`, `read_timeout`, `idle_timeout`, `max_connections`, `max_connections_per_address`. */
  limits: ListenerLimits;
  /** `[api] cert_file`, `key_file`, `tls_min`: HTTPS (and wss for /ws/*); plain HTTP when undefined. */
  tls?: ListenerTls | undefined;
}

export const API_PREFIX = '/api/v1';

export async function buildApi(deps: ApiDeps): Promise<FastifyInstance> {
  const { limits } = deps;
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit: deps.maxRequestBytes,
    // Per-request lines go out at debug level from the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true }),
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // Fastify's own 503 has its own shape; refuseWhileClosing answers with ours.
    return503OnClosing: false,
    serverFactory: (handler) => createListenerServer(limits, deps.tls, handler),
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.idleTimeoutMs,
    clientErrorHandler: apiClientErrorHandler(limits, deps.logger),
    frameworkErrors: (err, request, reply) => {
      void sendAppError(request, reply, err);
    },
  });
  const perAddress = limits.maxConnectionsPerAddress ?? 0;
  shareConnections(app, limits.maxConnections, perAddress);
  shareRequests(app, requestShareOf(perAddress));
  closeAfterEarlyAnswer(app);
  refuseConnectMethod(app.server);
  // A failed TLS handshake (wrong protocol, certificate refused by the peer, too slow) never reaches Fastify.
  app.server.on('tlsClientError', (err: Error & { code?: string }, socket: { remoteAddress?: string }) => {
    deps.logger.debug({ ip: socket.remoteAddress, cause: err.code ?? err.message }, 'TLS handshake failed');
  });
  refuseWhileClosing(app);
  requireHostHeader(app);
  if (deps.logRequests) registerRequestLogging(app);
  if (deps.observeRequest) observeRequests(app, deps.observeRequest);
  if (deps.audit.log)
    auditRequests(app, deps.audit.log, { prefixes: [API_PREFIX, '/api'], hostnameOf: deps.audit.hostnameOf });
  // Only JSON bodies are accepted; other content types get a clear 400 instead of being read as text.
  app.removeContentTypeParser('text/plain');
  registerJsonBody(app);
  let spaFallback: SpaFallback | undefined;
  registerErrorHandlers(
    app,
    new RouteMethods(app),
    API_PREFIX,
    (request, reply) => spaFallback?.(request, reply) ?? false,
  );
  if (deps.ui) spaFallback = await serveStaticUi(app, deps.ui);
  const operations = new OperationRegistry(app);
  await app.register(
    (api, _options, done) => {
      registerAuthHook(api, deps.auth);
      registerPermissionHook(api, deps.permissions);
      registerAccess(api, deps.access);
      statusRoutes(api, deps.getStatus);
      loginRoutes(api, deps.auth, {
        ...(deps.secondFactor ? { twoFactor: deps.secondFactor.login } : {}),
        ...(deps.delegated ? { delegated: deps.delegated } : {}),
      });
      if (deps.secondFactor) twoFactorRoutes(api, deps.secondFactor.login, deps.secondFactor.totp);
      userRoutes(api, deps.users);
      userGroupRoutes(api, deps.userGroups);
      meRoutes(api, deps.me);
      apiTokenRoutes(api, deps.apiTokens);
      savedViewRoutes(api, deps.savedViews);
      clientsAuthRoutes(api, deps.clientsAuth);
      clientRoutes(api, deps.clients);
      clientGroupRoutes(api, deps.clientGroups);
      tunnelRoutes(api, deps.tunnels);
      commandRoutes(api, deps.jobs, deps.library);
      libraryRoutes(api, deps.library);
      vaultAdminRoutes(api, deps.vault);
      vaultRoutes(api, deps.vault);
      multiCommandRoutes(api, deps.multiJobs, deps.library);
      scheduleRoutes(api, deps.schedules);
      alertRoutes(api, deps.alerts);
      auditLogRoutes(api, deps.audit.service);
      if (deps.wsTestPage) wsTestPageRoutes(api);
      openApiRoutes(api, operations, { docs: deps.docs });
      done();
    },
    { prefix: API_PREFIX },
  );
  // The spec's only example of a multi-client script call uses the path without the version.
  await app.register(
    (api, _options, done) => {
      registerAuthHook(api, deps.auth);
      registerPermissionHook(api, deps.permissions);
      registerAccess(api, deps.access);
      multiScriptRoute(api, deps.multiJobs, deps.library);
      done();
    },
    { prefix: '/api' },
  );
  const closeSockets = serveJobSockets(app.server, API_PREFIX, {
    auth: deps.auth,
    multi: deps.multiJobs,
    permissions: deps.permissions,
    log: deps.logger,
    access: deps.access,
  });
  app.addHook('preClose', (done) => {
    closeSockets();
    done();
  });
  return app;
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
