import { hostname } from 'node:os';
import type { FastifyInstance } from 'fastify';
import type { StatusData } from '@svc/protocol';
import { MemoryReclaim, reclaimLogFields, type Logger, type MemoryReclaimTiming } from '@svc/platform';
import { Authenticator } from './core/auth/authenticator.js';
import { LoginGuard } from './core/auth/login-guard.js';
import { memoryLoginThrottleStore } from './core/auth/memory-login-throttle-store.js';
import { CachedSessionStore } from './core/auth/session-check-cache.js';
import { systemClock, type Clock } from './core/auth/ports.js';
import type { UserStore } from './core/users/user-store.js';
import { UsersService } from './core/users/users-service.js';
import type { TwoFactorService } from './core/two-factor/two-factor-service.js';
import { MeService } from './core/users/me-service.js';
import { ApiTokensService } from './core/api-tokens/api-tokens-service.js';
import { SavedViewsService } from './core/saved-views/saved-views-service.js';
import { SqlSavedViewRepository } from './storage/saved-view-repository.js';
import { DelegatedLogin } from './core/auth/delegated-login.js';
import type { PasswordHasher } from './core/auth/ports.js';
import type { KdfParams } from './core/vault/vault-crypto.js';
import { VaultService } from './core/vault/vault-service.js';
import { ClientsAuthService } from './core/clients-auth/clients-auth-service.js';
import { ClientCredentialChecker, refuseAllClients } from './core/clients-auth/credential-checker.js';
import type { SvcdConfig } from './config/schema.js';
import type { ClientDirectory } from './core/clients/client-directory.js';
import { ClientsService } from './core/clients/clients-service.js';
import { ClientGroupsService } from './core/client-groups/client-groups-service.js';
import { JobsService } from './core/jobs/jobs-service.js';
import { LibraryService } from './core/library/library-service.js';
import { JobWatch, jobOutputTo } from './core/jobs/job-watch.js';
import { CountingJobRepository, JobTally } from './core/jobs/job-tally.js';
import type { JobRepository } from './core/jobs/ports.js';
import { MultiJobsService } from './core/jobs/multi-jobs-service.js';
import { coordinatorLost, INTERRUPTED } from './core/jobs/run-recovery.js';
import { Scheduler } from './core/schedules/scheduler.js';
import { multiJobScheduleRuns } from './core/schedules/schedule-runs.js';
import { SchedulesService } from './core/schedules/schedules-service.js';
import { ScheduleScopes } from './core/schedules/schedule-scope.js';
import type { StoredFiring } from './core/schedules/ports.js';
import type { JobQueueTuning } from './core/jobs/job-queue.js';
import { sweepJobDeadlines } from './core/jobs/job-deadlines.js';
import { directoryJobClients, directoryTargetClients } from './core/jobs/directory-job-clients.js';
import { schedulePurge } from './core/clients/purge.js';
import { PortPool } from './core/tunnels/port-pool.js';
import { TunnelsService } from './core/tunnels/tunnels-service.js';
import { startAgentLink, type AgentLink, type AgentLinkTuning } from './gateway/agent-link.js';
import { loadHostKey } from './gateway/load-host-key.js';
import type { LiveConnections } from './gateway/live-connections.js';
import type { TunnelHost } from './gateway/tunnel-host.js';
import { singleNodeSeam, type ClientSeam, type ClientSeamDeps } from './client-seam.js';
import {
  clusterNodeId,
  clusterSeam,
  type ClusterNode,
  type ClusterSeamDeps,
} from './cluster/cluster-seam.js';
import type { DrainOutcome } from './cluster/node-drain.js';
import { DatabaseWatch } from './cluster/database-watch.js';
import { buildApi } from './http/app.js';
import { openAudit, type OpenedAudit } from './audit-wiring.js';
import type { DelegatedAuth } from './http/routes/login.js';
import { hostOfUrl, publicUrl, splitHostPort } from './infra/address.js';
import { createBcryptHasher } from './infra/bcrypt-hasher.js';
import { ensureDataDir, loadOrCreateSecret, randomSecret } from './infra/data-dir.js';
import { createJwtSigner } from './infra/jwt-signer.js';
import { removeInterruptedWrites } from './infra/json-file.js';
import { loadListenerTls, type ListenerTls } from './infra/listener-tls.js';
import { createSvcdMetrics, type SvcdMetrics } from './infra/metrics/svcd-metrics.js';
import { DescriptorGauge } from './infra/descriptor-gauge.js';
import { DescriptorExhaustionLog, keepAccepting } from './infra/descriptor-exhaustion.js';
import {
  startMetricsListener,
  type MetricsListener,
  METRICS_PATH,
} from './infra/metrics/metrics-listener.js';
import { openDatabase, type Database } from './storage/database.js';
import { SqlClientGroupRepository } from './storage/client-group-repository.js';
import { SqlClientRepository } from './storage/client-repository.js';
import { SqlJobRepository } from './storage/job-repository.js';
import { SqlLibraryScriptRepository } from './storage/library-script-repository.js';
import { SqlMultiJobRepository } from './storage/multi-job-repository.js';
import { SqlScheduleRepository } from './storage/schedule-repository.js';
import { openClientAuthStore } from './storage/open-client-auth-store.js';
import { openGroupDetails, openUserStore } from './storage/open-user-store.js';
import { accessControlOf } from './storage/open-access-control.js';
import type { UserAccess } from './core/access/access-control.js';
import { Permissions } from './core/permissions/permissions.js';
import { UserGroupsService } from './core/permissions/user-groups-service.js';
import { SqlSessionStore } from './storage/session-store.js';
import { sqlLoginThrottleStore } from './storage/login-throttle-store.js';
import { SqlApiTokenRepository } from './storage/api-token-repository.js';
import { deleteUserLeftovers } from './storage/user-leftovers.js';
import { SqlTunnelRepository } from './storage/tunnel-repository.js';
import { openVaultStorage, type VaultStorage } from './storage/open-vault-storage.js';
import { SVCD_VERSION } from './version.js';
import { CONSOLE_BUILD_DIR, staticUiReady, type StaticUi } from './http/static-ui.js';
import { reclaimAfterConnectBursts, reclaimAfterLargeRuns } from './infra/memory-reclaim.js';
import { buildSecondFactor } from './second-factor.js';
import { buildAlerts, type AlertParts } from './alerts.js';

const SESSION_PURGE_INTERVAL_MS = 3600_000;

export interface RunningServer {
  /** Base URL of the management API, when `[api] address` is set. */
  readonly apiUrl: string | undefined;
  /** URL of the web console (or of `[api] doc_root`'s UI), when one is served. */
  readonly consoleUrl: string | undefined;
  /** The API's Fastify instance (when the API is on), for `inject()` in tests. */
  readonly apiApp: FastifyInstance | undefined;
  /** URL of the Prometheus metrics, when `[api] metrics_address` is set. */
  readonly metricsUrl: string | undefined;
  readonly clientPort: number;
  readonly connectUrls: string[];
  readonly fingerprint: string;
  /** Client records (the client directory). */
  readonly clients: ClientDirectory;
  /** This node's live agent connections. */
  readonly connections: LiveConnections;
  /** Tunnels of the clients connected to this node. */
  readonly tunnels: TunnelHost;
  /** Client groups; `membersOf` resolves the `group_ids` of multi-client commands. */
  readonly clientGroups: ClientGroupsService;
  /** Fires the schedules due now (by the schedule clock); tests with `scheduleClock` call it instead of a timer. */
  tickSchedules(): Promise<number>;
  /** Writes the queued audit records now (tests; they are written within ~50 ms anyway). */
  flushAudit(): Promise<void>;
  /** Re-reads the user file (SIGUSR1). */
  reloadUsers(): Promise<void>;
  /**
   * Cluster mode: stops taking agents, asks them to reconnect to other nodes and waits for them to move (bounded by
   * `[cluster] drain_timeout`); undefined on a single node, which has nowhere to send them. close() follows.
   */
  drain(): Promise<DrainOutcome | undefined>;
  /**
   * Stops accepting, lets in-flight requests finish, closes the database. `processExits`: the process exits right
   * after (SIGTERM), so the agents' links are not torn down one by one: each agent gets its goodbye after the
   * database is closed and the kernel closes the sockets at exit.
   */
  close(options?: { processExits?: boolean }): Promise<void>;
}

/** Tunnel settings that are not configuration keys. */
export interface TunnelTuning {
  /** Length of a minute of `idle-timeout-minutes`; tests shorten it. */
  minuteMs: number;
}

export interface ServerOptions {
  /** Agent-link limits that are not configuration keys (tests, benchmarks). */
  agentLink?: Partial<AgentLinkTuning>;
  /** Dispatches at once of a concurrent multi-client job (tests, benchmarks). */
  concurrentJobWindow?: number;
  tunnels?: Partial<TunnelTuning>;
  /** How often overdue jobs are looked for (DEADLINE_SWEEP_INTERVAL_MS unless tests shorten it). */
  jobSweepIntervalMs?: number;
  /** Pacing of queued-job delivery (tests, benchmarks). */
  jobQueue?: JobQueueTuning;
  /** scrypt cost of a new vault; tests pass cheaper parameters than the production ones. */
  vaultKdf?: KdfParams;
  /** What agent admission knows of descriptors; by default this process's soft limit and /proc/self/fd. */
  descriptors?: DescriptorGauge;
  /**
   * The clock schedules are created and fired by. When given (tests), no timer fires them: the test moves the
   * clock and calls `tickSchedules()`.
   */
  scheduleClock?: Clock;
  /** Told of each schedule firing once recorded (tests, the schedules benchmark). */
  onScheduleFiring?: (firing: StoredFiring) => void;
  /** Called when `svcd drain` asks this node to drain (cluster mode); the caller then stops it as on SIGTERM. */
  drainRequested?: () => void;
  /**
   * Waits of the memory reclaim after load (3 s quiet, 10 s after a burst of agent connections, 3 s between its
   * collections); tests shorten them.
   */
  memoryReclaim?: Pick<MemoryReclaimTiming, 'quietMs' | 'secondCollectionMs'> & {
    connectBurstQuietMs?: number;
  };
}

type Opened = {
  metrics?: MetricsListener;
  api?: FastifyInstance;
  clients?: AgentLink;
  tunnels?: TunnelHost;
  vault?: VaultStorage;
  multiJobs?: MultiJobsService;
  scheduler?: Scheduler;
  alerts?: AlertParts;
  memoryReclaim?: MemoryReclaim;
  stopDeadlineSweep?: () => void;
  cluster?: ClusterNode;
  databaseWatch?: DatabaseWatch;
  audit?: OpenedAudit;
  database: Database;
};

/** Wires the adapters together and starts the listeners. `config` has its paths already resolved. */
export async function startServer(
  config: SvcdConfig,
  logger: Logger,
  options: ServerOptions = {},
): Promise<RunningServer> {
  const startedAt = systemClock.now();
  const dataDir = config.server.data_dir;
  // Certificate problems stop the start before anything is opened.
  const agentTls = await loadListenerTls(
    { certFile: config.server.tls_cert, keyFile: config.server.tls_key, min: config.server.tls_min },
    { cert: '[server] tls_cert', key: '[server] tls_key' },
  );
  const apiTls = config.api.address
    ? await loadListenerTls(
        { certFile: config.api.cert_file, keyFile: config.api.key_file, min: config.api.tls_min },
        { cert: '[api] cert_file', key: '[api] key_file' },
      )
    : undefined;
  await ensureDataDir(dataDir);
  await cleanInterruptedWrites([config.api.auth_file, config.server.auth_file], logger);
  const hostKey = await loadHostKey(config.server.key_seed, dataDir);
  const database = await openDatabase(config.database, { dataDir });
  const opened: Opened = { database };
  const descriptors = options.descriptors ?? DescriptorGauge.ofThisProcess();
  const exhaustion = new DescriptorExhaustionLog(logger);
  try {
    const hasher = createBcryptHasher();
    const sessions = new CachedSessionStore(new SqlSessionStore(database));
    const pool = new PortPool(config.server.used_ports, config.server.excluded_ports);
    if (pool.size === 0)
      logger.warn('no ports for tunnels: [server] used_ports minus excluded_ports is empty');
    const [firstUrl] = config.server.url ?? [];
    // The client seam: records, events, this node's connections and tunnels, and the dispatch (client-seam.ts).
    const clientRows = new SqlClientRepository(database);
    const seamDeps: ClientSeamDeps = {
      nodeId: config.cluster.enabled ? clusterNodeId(config.cluster) : hostname(),
      clients: clientRows,
      tunnels: new SqlTunnelRepository(database),
      tunnelSettings: {
        pool,
        checkPortTimeoutMs: config.server.check_port_timeout,
        minuteMs: options.tunnels?.minuteMs ?? 60_000,
        publicHost: firstUrl === undefined ? undefined : hostOfUrl(firstUrl),
      },
      clock: systemClock,
      log: logger,
    };
    // With [cluster] enabled the directory, presence and dispatch span the nodes (cluster/).
    const seam = config.cluster.enabled
      ? await startClusterSeam({ ...seamDeps, clients: clientRows }, config.cluster, opened, logger)
      : singleNodeSeam(seamDeps);
    const { events, directory: clients, dispatch } = seam;
    opened.tunnels = seam.tunnelHost;
    await clients.load();
    const tunnels = new TunnelsService(clients, dispatch);
    const audit = openAudit(config.audit, { database, events, clients, nodeId: hostname(), log: logger });
    opened.audit = audit;
    const clientAuthStore = await openClientAuthStore(config.server, () => Promise.resolve(database));
    if (!clientAuthStore)
      logger.warn('no client credential source: set [server] auth, auth_file or auth_table');

    opened.vault = await openVaultStorage(database, config.database, dataDir);
    // Every start finds the vault locked (DESIGN: vault after restart); the data key lives only in memory.
    const vault = new VaultService(opened.vault.repository, systemClock, {
      ...(options.vaultKdf ? { kdf: options.vaultKdf } : {}),
    });
    logger.info({ storage: opened.vault.description }, 'vault storage opened');

    // Also what multi-client commands resolve `group_ids` with (membersOf).
    const clientGroups = new ClientGroupsService(new SqlClientGroupRepository(database), clients, events);
    const jobTally = new JobTally();
    // Counting costs a little per job, so only when someone reads the counts.
    const jobRepository: JobRepository = config.api.metrics_address
      ? new CountingJobRepository(new SqlJobRepository(database), jobTally)
      : new SqlJobRepository(database);
    const jobWatch = new JobWatch(events);
    const memoryReclaim = new MemoryReclaim(
      (outcome) =>
        logger.info(
          reclaimLogFields(outcome),
          'gave back the memory of a large multi-client run or a burst of agent connections (two full garbage collections, C heap trim)',
        ),
      options.memoryReclaim,
    );
    opened.memoryReclaim = memoryReclaim;
    const jobs = new JobsService(jobRepository, directoryJobClients(clients), dispatch, systemClock, events, {
      log: logger,
      secrets: vault,
      ...(options.jobQueue ? { tuning: options.jobQueue } : {}),
    });
    // A client that connects gets the jobs queued for it (queue_ttl), paced.
    const stopQueueDelivery = events.subscribe('attached', ({ clientId }) => jobs.queue.deliver(clientId));
    // Alerts: client_offline from the client events, run_failed when a run ends, schedule_failed from the firings.
    const alerts = buildAlerts(config, {
      events,
      clients: {
        get: (id) => {
          const record = clients.get(id);
          return (
            record && {
              name: record.name,
              tags: record.tags,
              connected: record.connection_state === 'connected',
            }
          );
        },
        membersOf: (groupIds) => clientGroups.membersOf(groupIds),
      },
      runOutcome: async (jid) => {
        const { job, counts } = await multiJobs.get(jid, false, false);
        return { status: job.status, counts: { ...counts }, schedule_id: job.schedule_id ?? null };
      },
      clock: systemClock,
      logger,
      database,
      nodeId: seamDeps.nodeId,
    });
    opened.alerts = alerts;
    const reclaimAfterRun = reclaimAfterLargeRuns(memoryReclaim);
    const multiJobs = new MultiJobsService({
      multiJobs: new SqlMultiJobRepository(database, opened.cluster?.nodeId ?? null),
      jobs: jobRepository,
      single: jobs,
      clients: directoryTargetClients(clients),
      groups: clientGroups,
      watch: jobWatch,
      dispatch,
      secrets: vault,
      clock: systemClock,
      log: logger,
      afterRun: (targets, jid) => {
        reclaimAfterRun(targets);
        alerts.runDispatched(jid);
      },
      ...(options.concurrentJobWindow ? { window: options.concurrentJobWindow } : {}),
    });
    opened.multiJobs = multiJobs;
    // In a cluster only the runs of this node's earlier life and of nodes that are gone: others are still going.
    const cluster = opened.cluster;
    const live = cluster ? await cluster.liveNodes() : undefined;
    const recovered = await multiJobs.recoverInterrupted(
      cluster && {
        nodeId: cluster.nodeId,
        ends: (coordinator) =>
          coordinator === null || coordinator === cluster.nodeId || !live?.has(coordinator),
        reason: (coordinator) =>
          coordinator === null || coordinator === cluster.nodeId ? INTERRUPTED : coordinatorLost(coordinator),
      },
    );
    if (recovered > 0)
      logger.warn(
        { runs: recovered },
        'multi-client runs were cut short by the last stop of svcd; the clients they had not reached got failed jobs',
      );
    if (cluster) onNodeLost(cluster, jobs, multiJobs, logger);
    const stopSweep = sweepJobDeadlines(jobs, logger, options.jobSweepIntervalMs);
    opened.stopDeadlineSweep = () => {
      stopSweep();
      stopQueueDelivery();
      jobs.queue.close();
    };
    const library = new LibraryService(new SqlLibraryScriptRepository(database), systemClock);
    const scheduleRepository = new SqlScheduleRepository(database);
    /** Set once the users are open (below): a schedule's vault references are resolved as its owner. */
    let scheduleOwners: UserStore | undefined;
    // Set once the API's user store is open: the creator's limits are checked at each firing (issue 28).
    let scheduleAccess: ((username: string) => Promise<UserAccess | undefined>) | undefined;
    const scheduleRuns = multiJobScheduleRuns(
      multiJobs,
      library,
      (name) => (scheduleOwners ? scheduleOwners.find(name) : Promise.resolve(undefined)),
      (by) => Promise.resolve(scheduleAccess?.(by)),
    );
    const scheduleClock = options.scheduleClock ?? systemClock;
    const schedules = new SchedulesService(
      scheduleRepository,
      scheduleRuns,
      scheduleClock,
      new ScheduleScopes((definition) => multiJobs.targetIdsNow(definition)),
    );
    const scheduler = new Scheduler({
      repository: scheduleRepository,
      runs: scheduleRuns,
      clock: scheduleClock,
      log: logger,
      missedRunWindowMs: config.schedules.missed_run_window,
      onFiring: (firing) => {
        alerts.firing(firing);
        options.onScheduleFiring?.(firing);
      },
    });
    opened.scheduler = scheduler;
    // Its first tick runs the firings missed while svcd was down (within missed_run_window).
    if (!options.scheduleClock) scheduler.start(config.schedules.catch_up_delay);
    const metrics = config.api.metrics_address
      ? createSvcdMetrics({
          clients,
          events,
          jobs: jobTally,
          tunnels: seam.tunnelHost,
          agentLink: () => opened.clients?.stats(),
          descriptors: () => descriptors.use(),
          alerts: () => alerts.counts(),
        })
      : undefined;

    // A cluster node without its database takes no agents (the others go on).
    if (config.cluster.enabled) {
      opened.databaseWatch = new DatabaseWatch(database, config.cluster.heartbeat_interval, logger);
      opened.databaseWatch.start();
    }
    const databaseWatch = opened.databaseWatch;
    opened.clients = await startAgentLink({
      address: config.server.address,
      hostKey,
      connections: seam.connections,
      authenticator: clientAuthStore
        ? new ClientCredentialChecker(clientAuthStore, config.server.client_login_wait, systemClock)
        : refuseAllClients,
      keepaliveIntervalMs: config.server.keepalive_interval,
      maxConcurrentHandshakes: config.server.max_concurrent_ssh_handshakes,
      upgradeTimeoutMs: config.server.upgrade_timeout,
      maxConnections: config.server.max_connections,
      tls: agentTls,
      serverVersion: SVCD_VERSION,
      jobResults: jobs,
      jobOutput: jobOutputTo(events),
      clientConnected: reclaimAfterConnectBursts(memoryReclaim, {
        quietMs: options.memoryReclaim?.connectBurstQuietMs,
      }),
      descriptors,
      exhaustion,
      ...(databaseWatch ? { unavailable: () => databaseWatch.refusal() } : {}),
      log: logger,
      ...(options.agentLink ? { tuning: options.agentLink } : {}),
    });
    const clientHost = splitHostPort(config.server.address).host;
    const connectUrls = config.server.url ?? [
      publicUrl(agentTls ? 'https' : 'http', clientHost, opened.clients.port, hostname()),
    ];
    logger.info(
      {
        address: config.server.address,
        port: opened.clients.port,
        fingerprint: hostKey.fingerprint,
        ...tlsLogFields(agentTls),
      },
      'client listener started',
    );

    const getStatus = async (): Promise<StatusData> => {
      const counts = clients.counts();
      const fds = descriptors.use();
      const cluster = await opened.cluster?.status();
      return {
        connect_url: connectUrls,
        fingerprint: hostKey.fingerprint,
        clients_connected: counts.connected,
        clients_disconnected: counts.disconnected,
        version: SVCD_VERSION,
        started_at: startedAt.toISOString(),
        uptime_sec: Math.max(0, Math.floor((systemClock.now().getTime() - startedAt.getTime()) / 1000)),
        descriptors_used: fds?.used ?? null,
        descriptors_limit: fds?.limit ?? null,
        descriptors_agent_high_water: fds?.agentHighWater ?? null,
        ...(cluster ? { cluster } : {}),
      };
    };

    let apiUrl: string | undefined;
    let consoleUrl: string | undefined;
    // Without an API there are no users to check: svcd then runs the agent listener alone (spec 1.1).
    let users: UserStore | undefined;
    let stopPendingLoginPurge: () => void = () => undefined;
    if (config.api.address) {
      users = await openUserStore(config.api, () => Promise.resolve(database), hasher);
      scheduleOwners = users;
      const groupDetails = openGroupDetails(config.api, database);
      const permissions = new Permissions(groupDetails);
      const jwtSecret =
        config.api.jwt_secret || (await loadOrCreateSecret(dataDir, 'jwt-secret', randomSecret));
      if (config.cluster.enabled && !config.api.jwt_secret)
        logger.warn(
          '[api] jwt_secret is not set: this node signs tokens with a secret of its own, which the other nodes refuse; give every node the same jwt_secret',
        );
      const apiTokenRepository = new SqlApiTokenRepository(database);
      const auth = new Authenticator({
        users,
        hasher,
        apiTokens: apiTokenRepository,
        tokens: createJwtSigner(jwtSecret),
        sessions,
        clock: systemClock,
        maxTokenLifetimeMs: config.api.max_token_lifetime,
        secondFactor: config.api.totp_enabled || config.api.two_fa_token_delivery !== undefined,
        guard: new LoginGuard(
          {
            maxFailedLogin: config.api.max_failed_login,
            banTimeMs: config.api.ban_time,
            userLoginWaitMs: config.api.user_login_wait,
          },
          systemClock,
          // A cluster's nodes count failed logins and bans together, in the database they share.
          config.cluster.enabled ? sqlLoginThrottleStore(database) : memoryLoginThrottleStore(),
        ),
      });
      const secondFactor = await buildSecondFactor(config, {
        auth,
        users,
        database,
        clock: systemClock,
        logger,
      });
      stopPendingLoginPurge = schedulePendingLoginPurge(secondFactor.login, logger);
      const ui = staticUiOf(config.api, logger);
      const access = accessControlOf(config.api, users, database, clientGroups);
      const userStore = users;
      // A creator who no longer exists has no groups to read: their schedules run as before (unchecked).
      scheduleAccess = async (name) => {
        const creator = await userStore.find(name);
        return creator ? access.of(creator) : undefined;
      };
      const api = await buildApi({
        auth,
        secondFactor,
        users: new UsersService(
          users,
          hasher,
          secondFactor.sendTo,
          (username) => deleteUserLeftovers(database, username),
          secondFactor.stateOf,
        ),
        me: new MeService(
          users,
          hasher,
          (name, password, ip) => auth.checkPassword(name, password, ip),
          {
            twoFaEnabled: config.api.two_fa_token_delivery !== undefined,
            totpEnabled: config.api.totp_enabled,
          },
          permissions,
          secondFactor.sendTo,
        ),
        permissions,
        userGroups: new UserGroupsService(groupDetails, () => access.forgetRemembered()),
        apiTokens: new ApiTokensService(apiTokenRepository, systemClock),
        savedViews: new SavedViewsService(new SqlSavedViewRepository(database), systemClock),
        ...delegatedAuth(config.api, users, hasher),
        clients: new ClientsService(clients, clientGroups),
        access,
        clientGroups,
        tunnels,
        jobs,
        library,
        vault,
        multiJobs,
        schedules,
        alerts: alerts.service,
        audit: { ...audit, hostnameOf: (id) => clients.get(id)?.hostname },
        wsTestPage: config.server.enable_ws_test_endpoints || config.api.enable_ws_test_endpoints,
        docs: config.api.docs,
        ui,
        clientsAuth: new ClientsAuthService(clientAuthStore, seam.credentials, {
          writable: config.server.auth_write,
        }),
        getStatus,
        logger,
        logRequests: config.logging.log_level === 'debug',
        observeRequest: metrics?.observeRequest,
        maxRequestBytes: config.api.max_request_bytes,
        limits: {
          headerTimeoutMs: config.api.read_header_timeout,
          requestTimeoutMs: config.api.read_timeout,
          idleTimeoutMs: config.api.idle_timeout,
          maxConnections: config.api.max_connections,
          maxConnectionsPerAddress: config.api.max_connections_per_address,
        },
        tls: apiTls,
      });
      opened.api = api;
      const { host, port } = splitHostPort(config.api.address);
      await api.listen({ host, port });
      keepAccepting(api.server, 'API listener', exhaustion, logger);
      api.server.on('connection', descriptors.track);
      const bound = api.server.address();
      const boundPort = typeof bound === 'object' && bound ? bound.port : port;
      const origin = publicUrl(apiTls ? 'https' : 'http', host, boundPort, hostname());
      apiUrl = `${origin}/api/v1`;
      if (ui) consoleUrl = `${origin}/`;
      logger.info(
        { url: apiUrl, user_store: users.kind, database: database.engine, ...tlsLogFields(apiTls) },
        'API listening',
      );
      if (consoleUrl) logger.info({ url: consoleUrl, ui: ui?.kind }, 'web console served');
    } else {
      logger.info('API disabled: set [api] address to enable it');
    }
    const { drainRequested } = options;
    if (drainRequested) opened.cluster?.onDrainRequest(drainRequested);
    const metricsUrl = await startMetrics(config.api.metrics_address, metrics, opened, logger);

    // The listeners, the vault and the user store are open now.
    void descriptors.recount();
    const purge = setInterval(() => {
      sessions
        .purgeExpired(systemClock.now())
        .catch((err: unknown) => logger.warn({ err }, 'session purge failed'));
    }, SESSION_PURGE_INTERVAL_MS);
    purge.unref();
    const stopClientPurge = config.server.purge_disconnected_clients
      ? schedulePurge(
          clients,
          {
            intervalMs: config.server.purge_disconnected_clients_interval,
            keepMs: config.server.keep_disconnected_clients,
          },
          logger,
        )
      : () => undefined;

    return {
      apiUrl,
      consoleUrl,
      apiApp: opened.api,
      metricsUrl,
      clientPort: opened.clients.port,
      connectUrls,
      fingerprint: hostKey.fingerprint,
      clients,
      connections: seam.connections,
      tunnels: seam.tunnelHost,
      clientGroups,
      tickSchedules: () => scheduler.tick(),
      flushAudit: () => audit.log?.flush() ?? Promise.resolve(),
      reloadUsers: () => users?.reload() ?? Promise.resolve(),
      async drain() {
        const link = opened.clients;
        if (!opened.cluster || !link) return undefined;
        return opened.cluster.drain(() => link.stopAccepting());
      },
      async close(options) {
        clearInterval(purge);
        stopClientPurge();
        stopPendingLoginPurge();
        descriptors.stop();
        await closeAll(opened, options);
      },
    };
  } catch (err) {
    descriptors.stop();
    await closeAll(opened);
    throw err;
  }
}

/**
 * A cluster node found gone: the jobs of its clients end `unknown` naming it (never stuck `running`), and the
 * runs it coordinated are ended by one surviving node (the clients not reached get a failed child saying so).
 */
function onNodeLost(
  cluster: ClusterNode,
  jobs: JobsService,
  multiJobs: MultiJobsService,
  logger: Logger,
): void {
  cluster.onNodeLost((nodeId, clientIds) => {
    void (async () => {
      const ended = await jobs.presumeLostWithNode(nodeId, clientIds);
      if (ended > 0)
        logger.warn(
          { node: nodeId, jobs: ended },
          'jobs presumed unknown: the node holding their clients left',
        );
      const runs = await multiJobs.recoverInterrupted({
        nodeId: cluster.nodeId,
        ends: (coordinator) => coordinator === nodeId,
        reason: () => coordinatorLost(nodeId),
      });
      if (runs > 0)
        logger.warn(
          { node: nodeId, runs },
          'ended the multi-client runs a node that left the cluster coordinated',
        );
    })().catch((err: unknown) => logger.warn({ err, node: nodeId }, 'ending the work of a lost node failed'));
  });
}

/** Joins the cluster (NATS presence and routing); the node is closed with the rest. */
async function startClusterSeam(
  deps: ClusterSeamDeps,
  cluster: SvcdConfig['cluster'],
  opened: Opened,
  logger: Logger,
): Promise<ClientSeam> {
  const { seam, node } = await clusterSeam(deps, cluster);
  opened.cluster = node;
  logger.info({ node_id: node.nodeId, nats_url: cluster.nats_url }, 'joined the cluster');
  return seam;
}

/** Pending two-factor logins whose login token expired are dropped with the sessions, hourly. */
function schedulePendingLoginPurge(login: TwoFactorService | undefined, logger: Logger): () => void {
  if (!login) return () => undefined;
  const timer = setInterval(() => {
    login
      .purgeExpired(systemClock.now())
      .catch((err: unknown) => logger.warn({ err }, 'pending login purge failed'));
  }, SESSION_PURGE_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** Delegated authentication when `[api] auth_header` is set (spec 5.5). */
function delegatedAuth(
  api: SvcdConfig['api'],
  users: UserStore,
  hasher: PasswordHasher,
): { delegated?: DelegatedAuth } {
  if (!api.auth_header) return {};
  const settings = {
    createMissingUsers: api.create_missing_users,
    defaultUserGroup: api.default_user_group,
  };
  return {
    delegated: {
      authHeader: api.auth_header,
      userHeader: api.user_header,
      login: new DelegatedLogin(users, hasher, settings),
    },
  };
}

/** What the start-up line says about a listener's TLS; the certificate's end shows when renewal is due. */
function tlsLogFields(tls: ListenerTls | undefined): Record<string, unknown> {
  if (!tls) return { tls: false };
  return {
    tls: true,
    tls_min: tls.minVersion,
    cert_subject: tls.subject,
    cert_valid_to: tls.validTo.toISOString(),
  };
}

/** A kill -9 during a write of the user or credential file leaves a side file; it goes at the next start. */
async function cleanInterruptedWrites(files: (string | undefined)[], logger: Logger): Promise<void> {
  for (const file of files) {
    if (!file) continue;
    const removed = await removeInterruptedWrites(file);
    if (removed.length > 0) logger.warn({ file, removed }, 'removed side files of interrupted writes');
  }
}

const IDLE_SWEEP_MS = 50;

/** Closes the API: in-flight requests finish; keep-alive connections close as soon as they fall idle. */
async function closeApi(api: FastifyInstance): Promise<void> {
  const sweep = setInterval(() => api.server.closeIdleConnections(), IDLE_SWEEP_MS);
  try {
    await api.close();
  } finally {
    clearInterval(sweep);
  }
}

/** The Prometheus listener on `[api] metrics_address`, when set; returns its URL. */
async function startMetrics(
  address: string,
  metrics: SvcdMetrics | undefined,
  opened: Opened,
  logger: Logger,
): Promise<string | undefined> {
  if (!address || !metrics) return undefined;
  opened.metrics = await startMetricsListener(address, metrics.registry, logger);
  const url = `${publicUrl('http', splitHostPort(address).host, opened.metrics.port, hostname())}${METRICS_PATH}`;
  logger.info({ url }, 'metrics listening');
  return url;
}

async function closeAll(opened: Opened, options: { processExits?: boolean } = {}) {
  await opened.metrics?.close();
  if (opened.api) await closeApi(opened.api);
  await opened.scheduler?.stop();
  await opened.alerts?.close();
  // Before the agents go: runs record the clients they will not start while the database is still open.
  await opened.multiJobs?.close();
  opened.stopDeadlineSweep?.();
  opened.databaseWatch?.stop();
  opened.memoryReclaim?.stop();
  // The Errors that closing every link makes (ssh2's "No response from server" and the control channel's
  // "closed", one or more per agent) need no stack, and capturing one costs ~60 µs: ~1 s of a stop with 19,000
  // agents (2026-11-28 profile). Errors made meanwhile carry their message and code only.
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  let sayGoodbye: (() => void) | undefined;
  try {
    // Tearing down 19,000 links in JavaScript (stream and SSH state, close events, a syscall each) took most of a
    // stop; a process that exits leaves the sockets to the kernel.
    if (options.processExits) sayGoodbye = await opened.clients?.release();
    else await opened.clients?.close();
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
  }
  await opened.tunnels?.closeAll();
  await opened.cluster?.close();
  await opened.vault?.close();
  // Last before the database: agent disconnects of the closing link are recorded too.
  await opened.audit?.close();
  await opened.database.close();
  if (sayGoodbye) {
    sayGoodbye();
    // The goodbyes' frames are written at the end of this turn (WebSocket frame batching); then the process exits.
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * `[api] doc_root`'s UI, else the web console unless `enable_web_console = false`. A console that was never built
 * (no `npm run build` in a source checkout) is a warning, not a failed start: the API works without it.
 */
function staticUiOf(api: SvcdConfig['api'], logger: Logger): StaticUi | undefined {
  if (api.doc_root) {
    const ui: StaticUi = { root: api.doc_root, kind: 'doc_root' };
    if (!staticUiReady(ui)) logger.warn({ doc_root: api.doc_root }, '[api] doc_root has no index.html');
    return ui;
  }
  if (!api.enable_web_console) return undefined;
  const ui: StaticUi = { root: CONSOLE_BUILD_DIR, kind: 'console' };
  if (staticUiReady(ui)) return ui;
  logger.warn({ dir: CONSOLE_BUILD_DIR }, 'web console not built (run npm run build); serving the API only');
  return undefined;
}
