import { JobRedactions } from './job-redactions.js';
import { availableParallelism } from 'node:os';
import type { Logger } from '@svc/platform';
import type { ClientAuthenticator } from '../core/clients/ports.js';
import type { JobOutputListener } from '../core/jobs/job-watch.js';
import type { JobResultSink } from '../core/jobs/ports.js';
import type { LiveConnections } from './live-connections.js';
import { startClientListener } from './client-listener.js';
import { HandshakeAdmission } from './handshake-admission.js';
import { HandshakeLimiter } from './handshake-limiter.js';
import { RefusalCounts } from './refusal-counts.js';
import { TunnelTraffic, type TunnelTrafficTotals } from './tunnel-traffic.js';
import type { HostKey } from './host-key.js';
import type { ListenerTls } from '../infra/listener-tls.js';
import type { DescriptorGauge } from '../infra/descriptor-gauge.js';
import type { DescriptorExhaustionLog } from '../infra/descriptor-exhaustion.js';
import { SshGateway } from './ssh-gateway.js';

/** Limits that are not configuration keys; tests and benchmarks may change them. */
export interface AgentLinkTuning {
  /** From login to an accepted hello. */
  helloTimeoutMs: number;
  /** From the WebSocket upgrade to a successful login. */
  handshakeTimeoutMs: number;
  /** Silence from an agent in its handshake after which its slot is given back (see HandshakeSlot). */
  handshakeStallMs: number;
  /** Upgrades waiting for a handshake slot; more are refused with 503. */
  handshakeQueueLimit: number;
  handshakeQueueWaitMs: number;
  /** Handshakes under way (upgrade to login) per handshake slot; past them agents get 503 with a Retry-After. */
  handshakesUnderWayPerSlot: number;
  /** The longest Retry-After told to an agent beyond them, in seconds. */
  maxRetryAfterS: number;
  /** Upgrades past them wait while a place should come within this long at the measured login rate. */
  admissionQueueSeconds: number;
  /** The longest such a wait lasts before the agent is told when to come back. */
  admissionWaitMs: number;
  /** Upgrades of agents that take word they still wait, kept waiting for their turn at once at most. */
  admissionPatientMax: number;
  /** How often such an agent is told it still waits (each restarts its 30 s for the upgrade). */
  admissionStillWaitingMs: number;
  /** Largest WebSocket message from an agent (SSH packets are at most ~35 KB). */
  maxPayloadBytes: number;
}

export const DEFAULT_AGENT_LINK_TUNING: AgentLinkTuning = {
  helloTimeoutMs: 30_000,
  // A stalled handshake holds a connection, not a slot, this long; a real agent logs in within a second.
  handshakeTimeoutMs: 10_000,
  // Longer than a round trip on a LAN; an agent further away gives its slot back while it waits and gets one again
  // ahead of new handshakes when its answer comes.
  handshakeStallMs: 50,
  // A waiting upgrade costs a socket and a parsed request; refusing one raises that agent's backoff, so after a
  // restart a short queue turns into minutes of stragglers (reconnect-storm bench: 101 s with 1000, 43 s with 10k).
  handshakeQueueLimit: 10_000,
  handshakeQueueWaitMs: 30_000,
  // About what two cores finish in one to two seconds of a storm; agents beyond are told when to come back.
  handshakesUnderWayPerSlot: 256,
  maxRetryAfterS: 120,
  // A wait costs a socket and no CPU, a refusal a connection on both ends. The wait and then a handshake slot must
  // fit in an agent's 30 s for the upgrade, which also counts the accept queue: with waits of 20–25 s thousands of
  // agents timed out in the cluster bench.
  admissionQueueSeconds: 10,
  admissionWaitMs: 15_000,
  // A waiting upgrade costs a socket and its parsed request (a few KiB); 5,000 arrive at each survivor when a node
  // of three with 30,000 agents dies.
  admissionPatientMax: 20_000,
  admissionStillWaitingMs: 10_000,
  maxPayloadBytes: 1024 * 1024,
};

export interface AgentLinkOptions {
  /** `[server] address`. */
  address: string;
  hostKey: HostKey;
  /** This node's live connections. */
  connections: LiveConnections;
  authenticator: ClientAuthenticator | undefined;
  keepaliveIntervalMs: number;
  /** `[server] max_concurrent_ssh_handshakes`; 0 = half the CPUs, at least 1. */
  maxConcurrentHandshakes: number;
  /** `[server] upgrade_timeout`. */
  upgradeTimeoutMs: number;
  /** `[server] max_connections`; 0 = no limit. */
  maxConnections: number;
  /** `[server] tls_cert`, `tls_key`, `tls_min`: agents connect with wss; plain ws when undefined. */
  tls?: ListenerTls | undefined;
  serverVersion: string;
  /** Where the agents' job results are stored. */
  jobResults?: JobResultSink;
  /** Told about job output as it arrives (live results). */
  jobOutput?: JobOutputListener;
  /** Told each time an agent's hello is accepted. */
  clientConnected?: () => void;
  /** New agents are refused with 503 once descriptors run short. */
  descriptors?: DescriptorGauge;
  exhaustion?: DescriptorExhaustionLog;
  /** Why new agents are refused with 503 now (a cluster node without its database), or undefined. */
  unavailable?: () => string | undefined;
  log: Logger;
  tuning?: Partial<AgentLinkTuning>;
}

/** What the agent link has seen, for monitoring; reading it walks only the open tunnel connections. */
export interface AgentLinkStats {
  /** Handshakes holding a slot of `[server] max_concurrent_ssh_handshakes`. */
  handshakesActive: number;
  /** Upgrades waiting for a slot. */
  handshakesWaiting: number;
  /** Handshakes admitted and not logged in yet (a slot held, waited for, or waiting for the agent). */
  handshakesUnderWay: number;
  /** Upgrades waiting for a place among those under way. */
  upgradesWaiting: number;
  /** Refused agent connections and logins by reason, since start. */
  refusals: ReadonlyMap<string, number>;
  tunnels: TunnelTrafficTotals;
}

export interface AgentLink {
  readonly port: number;
  stats(): AgentLinkStats;
  /** Closes the listener to new agents; the connected ones stay (drain). */
  stopAccepting(): void;
  /** Stops accepting, closes every agent connection (clients marked disconnected and saved), then the listener. */
  close(): Promise<void>;
  /**
   * For a process about to exit: stops accepting and stores every client disconnected, but leaves the links open.
   * Resolves with the function that says goodbye to every agent (an SSH disconnect each, no waiting); the sockets
   * then end with the process, closed by the kernel after the goodbyes it was given.
   */
  release(): Promise<() => void>;
}

export const handshakeConcurrency = (configured: number, cpus = availableParallelism()): number =>
  configured > 0 ? configured : Math.max(1, Math.floor(cpus / 2));

/** Starts the agent link: WebSocket listener → handshake limiter → SSH → control channel → live connections. */
export async function startAgentLink(options: AgentLinkOptions): Promise<AgentLink> {
  const tuning = { ...DEFAULT_AGENT_LINK_TUNING, ...options.tuning };
  const { connections, log } = options;
  const refusals = new RefusalCounts();
  const tunnelTraffic = new TunnelTraffic();
  const slots = handshakeConcurrency(options.maxConcurrentHandshakes);
  const admission = new HandshakeAdmission({
    maxUnderWay: slots * tuning.handshakesUnderWayPerSlot,
    maxRetryAfterS: tuning.maxRetryAfterS,
    queueSeconds: tuning.admissionQueueSeconds,
    maxWaitMs: tuning.admissionWaitMs,
    maxPatient: tuning.admissionPatientMax,
    stillWaitingMs: tuning.admissionStillWaitingMs,
  });
  const limiter = new HandshakeLimiter({
    concurrent: slots,
    queueLimit: tuning.handshakeQueueLimit,
    queueWaitMs: tuning.handshakeQueueWaitMs,
  });
  const gateway = new SshGateway({
    hostKeyPem: options.hostKey.privateKeyPem,
    handshakeTimeoutMs: tuning.handshakeTimeoutMs,
    handshakeStallMs: tuning.handshakeStallMs,
    limiter,
    connections,
    authenticator: options.authenticator,
    settings: {
      keepaliveIntervalMs: options.keepaliveIntervalMs,
      helloTimeoutMs: tuning.helloTimeoutMs,
      serverVersion: options.serverVersion,
    },
    ...(options.jobResults ? { jobResults: options.jobResults } : {}),
    ...(options.jobOutput ? { jobOutput: options.jobOutput } : {}),
    jobRedactions: new JobRedactions(),
    ...(options.clientConnected ? { clientConnected: options.clientConnected } : {}),
    refusals,
    tunnelTraffic,
    log,
  });
  const listener = await startClientListener({
    address: options.address,
    admission,
    limiter,
    maxPayloadBytes: tuning.maxPayloadBytes,
    upgradeTimeoutMs: options.upgradeTimeoutMs,
    maxConnections: options.maxConnections,
    tls: options.tls,
    onAgent: (stream, remote, release, ticket) => gateway.accept(stream, remote, release, ticket),
    refusals,
    descriptors: options.descriptors,
    ...(options.exhaustion ? { exhaustion: options.exhaustion } : {}),
    ...(options.unavailable ? { unavailable: options.unavailable } : {}),
    log,
  });
  let closing: Promise<void> | undefined;
  return {
    port: listener.port,
    stats: () => ({
      handshakesActive: limiter.active,
      handshakesWaiting: limiter.waiting,
      handshakesUnderWay: admission.active,
      upgradesWaiting: admission.waiting,
      refusals: refusals.snapshot(),
      tunnels: tunnelTraffic.totals(),
    }),
    stopAccepting: () => listener.stopAccepting(),
    async release() {
      listener.stopAccepting();
      const { connections: held } = await connections.releaseAll();
      return () => {
        for (const connection of held)
          if (connection.sayGoodbye) connection.sayGoodbye();
          else connection.close('svcd is shutting down');
        log.info({ agents: held.length }, 'said goodbye to every agent');
      };
    },
    close: () =>
      (closing ??= (async () => {
        listener.stopAccepting();
        await connections.closeAll('svcd is shutting down');
        await gateway.closeAll('svcd is shutting down');
        await listener.close();
      })()),
  };
}
