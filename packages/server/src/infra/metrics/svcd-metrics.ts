import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { JOB_STATUSES } from '@svc/protocol';
import type { ClientDirectory } from '../../core/clients/client-directory.js';
import type { ClientEvents } from '../../core/clients/client-events.js';
import type { JobTally } from '../../core/jobs/job-tally.js';
import type { AgentLinkStats } from '../../gateway/agent-link.js';
import type { RequestObserver } from '../../http/request-observer.js';
import type { DescriptorUse } from '../descriptor-gauge.js';

/** What the metrics read when scraped; nothing here is called per event. */
export interface MetricSources {
  clients: Pick<ClientDirectory, 'counts'>;
  /** Hellos accepted are counted from the `attached` events. */
  events: Pick<ClientEvents, 'subscribe'>;
  jobs: JobTally;
  tunnels: { openCount(): number };
  /** Undefined until the agent listener is up. */
  agentLink(): AgentLinkStats | undefined;
  /** Undefined where svcd cannot tell (no /proc, no limit). */
  descriptors?: () => DescriptorUse | undefined;
  /** Alert delivery attempts by outcome (delivered, retrying, given_up, dropped). */
  alerts?: () => Record<string, number>;
}

export interface SvcdMetrics {
  readonly registry: Registry;
  /** Feeds the HTTP request histogram; give it to the API. */
  readonly observeRequest: RequestObserver;
}

/** API latency buckets, in seconds: most answers take a millisecond or two, logins (bcrypt) a few hundred. */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Default series whose collection walks every open handle or file descriptor: with 10,000 agents each took
 * 5-16 ms of blocked event loop per scrape. svcd_clients and svcd_tunnel_connections_open count the connections.
 */
const PER_CONNECTION_SERIES = [
  'process_open_fds',
  'nodejs_active_handles',
  'nodejs_active_handles_total',
  'nodejs_active_resources',
  'nodejs_active_resources_total',
];

let processRegistry: Registry | undefined;

/**
 * Node's and the process's own series (memory, CPU, event-loop lag, GC, ...). One set per process: the event-loop
 * and GC monitors they start are process-wide, so several svcd instances in one process (tests) share them.
 */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
    for (const name of PER_CONNECTION_SERIES) processRegistry.removeSingleMetric(name);
  }
  return processRegistry;
}

/** Sets a counter to totals kept elsewhere (counters here only mirror counts the domain already keeps). */
function mirror<L extends string>(
  counter: Counter<L>,
  values: Iterable<[Partial<Record<L, string>>, number]>,
) {
  counter.reset();
  for (const [labels, value] of values) counter.inc(labels, value);
}

/** The svcd series, read from `sources` at scrape time, plus the HTTP histogram and the process's series. */
export function createSvcdMetrics(sources: MetricSources): SvcdMetrics {
  const registry = new Registry();
  const registers = [registry];
  const link = () => sources.agentLink();

  new Gauge({
    name: 'svcd_clients',
    help: 'Known clients by connection state (connected to this svcd, or disconnected).',
    labelNames: ['state'] as const,
    registers,
    collect() {
      const { connected, disconnected } = sources.clients.counts();
      this.set({ state: 'connected' }, connected);
      this.set({ state: 'disconnected' }, disconnected);
    },
  });
  const connects = new Counter({
    name: 'svcd_client_connections_total',
    help: 'Agent connections accepted (hello accepted) since start; reconnects count again.',
    registers,
  });
  sources.events.subscribe('attached', () => connects.inc());

  new Gauge({
    name: 'svcd_agent_handshakes_in_flight',
    help: 'Agent handshakes running now (each holds a slot of [server] max_concurrent_ssh_handshakes).',
    registers,
    collect() {
      this.set(link()?.handshakesActive ?? 0);
    },
  });
  new Gauge({
    name: 'svcd_agent_handshakes_waiting',
    help: 'Agent upgrades waiting for a handshake slot.',
    registers,
    collect() {
      this.set(link()?.handshakesWaiting ?? 0);
    },
  });
  new Gauge({
    name: 'svcd_agent_handshakes_under_way',
    help: 'Agent handshakes admitted and not logged in yet; past its bound upgrades wait, or get 503 with a Retry-After.',
    registers,
    collect() {
      this.set(link()?.handshakesUnderWay ?? 0);
    },
  });
  new Gauge({
    name: 'svcd_agent_upgrades_waiting',
    help: 'Agent upgrades waiting for a place among the handshakes under way.',
    registers,
    collect() {
      this.set(link()?.upgradesWaiting ?? 0);
    },
  });
  new Counter({
    name: 'svcd_agent_refusals_total',
    help:
      'Agent connections and logins refused since start, by reason (upgrade_required, agent_protocol, ' +
      'server_busy, malformed_http, request_timeout, max_connections, handshake_timeout, login_failed, ' +
      'no_hello, already_connected, out_of_descriptors).',
    labelNames: ['reason'] as const,
    registers,
    collect() {
      mirror(
        this,
        [...(link()?.refusals ?? [])].map(([reason, count]) => [{ reason }, count]),
      );
    },
  });

  new Gauge({
    name: 'svcd_descriptors',
    help:
      'File descriptors: open (each agent holds one), limit (the soft RLIMIT_NOFILE), agent_high_water (new ' +
      'agents are refused with 503 from here on; the rest is kept for the API, the database and tunnels).',
    labelNames: ['kind'] as const,
    registers,
    collect() {
      const use = sources.descriptors?.();
      if (!use) return;
      this.set({ kind: 'open' }, use.used);
      this.set({ kind: 'limit' }, use.limit);
      this.set({ kind: 'agent_high_water' }, use.agentHighWater);
    },
  });

  new Counter({
    name: 'svcd_jobs_total',
    help:
      'Jobs (commands and scripts) that entered each status in this process: running = created and sent to ' +
      'the client; successful, failed, unknown = ended (failed also counts jobs that could not start).',
    labelNames: ['status'] as const,
    registers,
    collect() {
      const counts = sources.jobs.enteredCounts();
      mirror(
        this,
        JOB_STATUSES.map((status) => [{ status }, counts[status]]),
      );
    },
  });
  new Gauge({
    name: 'svcd_jobs_running',
    help: 'Jobs this process created that have not ended yet.',
    registers,
    collect() {
      this.set(sources.jobs.runningCount);
    },
  });

  new Counter({
    name: 'svcd_alert_deliveries_total',
    help:
      'Alert delivery attempts by outcome: delivered, retrying (failed, retried later), given_up (the last ' +
      'attempt failed), dropped (the alert queue was full).',
    labelNames: ['outcome'] as const,
    registers,
    collect() {
      mirror(
        this,
        Object.entries(sources.alerts?.() ?? {}).map(([outcome, n]) => [{ outcome }, n]),
      );
    },
  });

  new Gauge({
    name: 'svcd_tunnels_open',
    help: 'Tunnels listening on this svcd.',
    registers,
    collect() {
      this.set(sources.tunnels.openCount());
    },
  });
  new Gauge({
    name: 'svcd_tunnel_connections_open',
    help: 'TCP connections being relayed through tunnels now.',
    registers,
    collect() {
      this.set(link()?.tunnels.open ?? 0);
    },
  });
  new Counter({
    name: 'svcd_tunnel_connections_total',
    help: 'TCP connections accepted by tunnels since start.',
    registers,
    collect() {
      mirror(this, [[{}, link()?.tunnels.connections ?? 0]]);
    },
  });
  new Counter({
    name: 'svcd_tunnel_bytes_total',
    help: 'Bytes relayed through tunnels since start: to_client = from the tunnel user towards the client.',
    labelNames: ['direction'] as const,
    registers,
    collect() {
      const totals = link()?.tunnels;
      mirror(this, [
        [{ direction: 'to_client' }, totals?.bytesToClients ?? 0],
        [{ direction: 'from_client' }, totals?.bytesFromClients ?? 0],
      ]);
    },
  });

  const requests = new Histogram({
    name: 'svcd_http_request_duration_seconds',
    help: 'API requests by method, route pattern and status, with their time to answer.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers,
  });

  return {
    registry: Registry.merge([registry, processMetrics()]),
    observeRequest: ({ method, route, status, seconds }) =>
      requests.observe({ method, route, status: String(status) }, seconds),
  };
}
