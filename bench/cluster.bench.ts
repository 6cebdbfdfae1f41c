/**
 * Several svcd nodes (issue 26, performance): its own nats-server with JetStream, a fresh PostgreSQL database
 * (127.0.0.1:5432, dropped at the end) and BENCH_NODES svcd nodes (built dist) in cluster mode; BENCH_AGENTS
 * simulated agents (bench/support/load-simulator.ts, the agent's real link) spread evenly over the nodes, each
 * node's share in BENCH_WORKERS_PER_NODE simulator processes. Once all are connected and every node lists them:
 *
 * 1. GET /api/v1/clients?page[limit]=50 through each node (BENCH_REQUESTS one after another, after a warm-up).
 * 2. Routing overhead: the round trip of one command (POST /clients/{id}/commands, a no-op the simulated agent
 *    answers at once, then GET of the job every BENCH_ROUTE_POLL_MS until it is finished) for a client of the
 *    first node, through that node and through the second one, alternating; ratio of the medians.
 * 3. Fan-out: POST /commands {command: "noop", client_ids, execute_concurrently} through the first node to
 *    BENCH_FANOUT_CLIENTS clients taken in turn from every node, until GET /commands/{jid} counts every child
 *    finished; median of BENCH_RUNS after a warm-up run.
 * 4. Failover: the last node is killed (SIGKILL); its agents go on to the other nodes (each simulated agent has
 *    the other nodes as fallback URLs). Timed until every one of them is listed connected, with a connected_at
 *    after the kill, through every surviving node; meanwhile GET /status at BENCH_STATUS_RATE per second on each.
 *
 *   npm run build && npm run bench:cluster
 *   BENCH_AGENTS=1500 nice -n 19 npm run bench:cluster    (a smoke run)
 *
 * Environment: BENCH_AGENTS (30000), BENCH_NODES (3), BENCH_WORKERS_PER_NODE (2), BENCH_HEARTBEAT_MS (5000:
 * `[cluster] heartbeat_interval`, svcd's default), BENCH_REQUESTS (300 per node), BENCH_ROUTE_RUNS (50 each
 * way), BENCH_ROUTE_POLL_MS (5), BENCH_FANOUT_CLIENTS (10000), BENCH_RUNS (3), BENCH_POLL_MS (20),
 * BENCH_STATUS_RATE (10 per surviving node), BENCH_FAILOVER_TIMEOUT (120 s), BENCH_CONNECT_CONCURRENCY (32
 * first attempts in flight per node), BENCH_CONNECT_TIMEOUT (900 s), BENCH_MAX_HANDSHAKES (each node's
 * max_concurrent_ssh_handshakes; unset = svcd's default), BENCH_SVCD_NODE_ARGS, BENCH_STRICT=1 (exit 1 when a
 * target fails). Needs nats-server on the PATH and PostgreSQL at 127.0.0.1:5432 (trust).
 *
 * All connections come from 127.0.0.1: a node holds at most BENCH_AGENTS / (BENCH_NODES - 1) after the kill
 * (15,000 at the defaults), below the ~28,000 ephemeral ports of one address pair and svcd's ~19,000 agents.
 * BENCH_SOURCE_ADDRESSES (e.g. 127.0.0.2-127.0.0.5; bench/support/source-addresses.ts) spreads them over several.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { StatusData } from './support/api-client.js';
import { runBench } from './support/bench-runner.js';
import { envNumber } from './support/child-processes.js';
import { failover, type FailoverResult } from './support/cluster-failover.js';
import {
  fanout,
  fanoutTargets,
  LIST_PATH,
  listingThroughEachNode,
  routingOverhead,
  type FanoutRun,
} from './support/cluster-measures.js';
import {
  checkClusterPlan,
  showNodeLogs,
  spread,
  startCluster,
  type BenchNode,
} from './support/cluster-setup.js';
import { summarize } from './support/latency.js';
import { presentClients } from './support/presence-count.js';
import { loadSettings } from './support/load-settings.js';
import { parseSourceAddresses } from './support/source-addresses.js';
import {
  checksTable,
  loadAverage,
  machine,
  progress,
  table,
  writeResult,
  type Check,
} from './support/report.js';
import type { FleetStats } from './support/simulator-fleet.js';

/** After the last connection: svcd's reclaim quiet time (10 s), its two collections 3 s apart, and a margin. */
const SETTLE_AFTER_CONNECT_MS = 20_000;

const TARGETS = {
  maxClientsP99Ms: 20,
  maxFanoutSeconds: 3,
  maxRoutingRatio: 1.5,
  maxFailoverSeconds: 30,
  maxStatusP99Ms: 50,
};

// BENCH_CLIENTS and BENCH_WORKERS are not used here: BENCH_AGENTS and BENCH_WORKERS_PER_NODE instead.
const { clients: _clients, workers: _workers, ...SETTINGS } = loadSettings(0);
const AGENTS = envNumber('BENCH_AGENTS', 30_000, 100_000);
const NODES = envNumber('BENCH_NODES', 3, 9);
const WORKERS_PER_NODE = envNumber('BENCH_WORKERS_PER_NODE', 2, 16);
const HEARTBEAT_MS = envNumber('BENCH_HEARTBEAT_MS', 5_000, 60_000);
const REQUESTS = envNumber('BENCH_REQUESTS', 300, 100_000);
const ROUTE_RUNS = envNumber('BENCH_ROUTE_RUNS', 50, 10_000);
const ROUTE_POLL_MS = envNumber('BENCH_ROUTE_POLL_MS', 5, 10_000);
const ROUTE_WARMUP = 5;
const FANOUT_CLIENTS = envNumber('BENCH_FANOUT_CLIENTS', 10_000, 100_000);
const RUNS = envNumber('BENCH_RUNS', 3, 1_000);
const POLL_MS = envNumber('BENCH_POLL_MS', 20, 10_000);
const STATUS_RATE = envNumber('BENCH_STATUS_RATE', 10, 1_000);
const FAILOVER_TIMEOUT_S = envNumber('BENCH_FAILOVER_TIMEOUT', 120, 3_600);
const SOURCE_ADDRESSES = parseSourceAddresses(process.env['BENCH_SOURCE_ADDRESSES'] ?? '');
/** How long every node may take to list every agent once the simulators have them all connected. */
const LISTED_TIMEOUT_MS = 180_000;

const ms = (value: number) => `${value.toFixed(0)} ms`;
const ms1 = (value: number) => `${value.toFixed(1)} ms`;
const seconds = (value: number | undefined) =>
  value === undefined ? `not within ${FAILOVER_TIMEOUT_S} s` : `${(value / 1000).toFixed(1)} s`;
const median = (values: number[]) => summarize(values).p50;

function describeFleet(node: BenchNode, s: FleetStats): string {
  const failures = Object.entries(s.failures)
    .map(([cause, n]) => `${cause} ${n}`)
    .join(', ');
  return (
    `${node.id}: ${s.connected}/${node.agents} connected, ${s.handshaking} handshaking, ${s.backingOff} backing off` +
    (failures ? `; failed attempts: ${failures}` : '')
  );
}

/** Polls /status (every 500 ms, bounded) until the node counts `count` connected clients. */
async function waitCounted(node: BenchNode, count: number): Promise<void> {
  const deadline = Date.now() + LISTED_TIMEOUT_MS;
  for (;;) {
    const status = (await node.api.getJson<StatusData>('/status')).data;
    if (status.clients_connected === count) return;
    if (Date.now() > deadline)
      throw new Error(`${node.id} counts ${status.clients_connected} connected clients, expected ${count}`);
    await sleep(500);
  }
}

const disconnects = (nodes: BenchNode[]) => nodes.reduce((n, node) => n + node.fleet.stats().disconnects, 0);

function failoverChecks(result: FailoverResult): Check[] {
  const worst = result.status.reduce((a, b) => (b.p99 > a.p99 ? b : a));
  const errors = result.status.reduce((n, s) => n + s.errors, 0);
  return [
    {
      target: `failover: ${result.agents} agents of the killed ${result.victim} listed connected elsewhere`,
      value: seconds(result.listedMs),
      limit: `<= ${TARGETS.maxFailoverSeconds} s`,
      pass: result.listedMs !== undefined && result.listedMs <= TARGETS.maxFailoverSeconds * 1000,
    },
    {
      target: `GET /status p99 meanwhile, worst surviving node (${worst.node}); answers not 200`,
      value: `${ms1(worst.p99)}; ${errors}`,
      limit: `<= ${TARGETS.maxStatusP99Ms} ms; 0`,
      pass: worst.p99 <= TARGETS.maxStatusP99Ms && errors === 0,
    },
  ];
}

/** "group ms" for each process group, largest first, with the sum. */
function cpuRow(msByGroup: Record<string, number>): string {
  const sorted = Object.entries(msByGroup).sort((a, b) => b[1] - a[1]);
  const sum = sorted.reduce((n, [, ms]) => n + ms, 0);
  return `${sorted.map(([group, ms]) => `${group} ${ms.toFixed(0)}`).join(', ')}; sum ${sum.toFixed(0)} ms`;
}

/** cpuRow of the medians over the runs. */
function machineCpuRow(runs: FanoutRun[]): string {
  const groups = [...new Set(runs.flatMap((run) => Object.keys(run.machineCpuMs)))];
  return cpuRow(
    Object.fromEntries(
      groups.map((group) => [group, median(runs.map((run) => run.machineCpuMs[group] ?? 0))]),
    ),
  );
}

async function main(): Promise<boolean> {
  await checkClusterPlan(NODES, AGENTS, SOURCE_ADDRESSES, 'one is killed for the failover');
  const loadBefore = loadAverage();
  const perNode = spread(AGENTS, NODES);
  progress(
    `${AGENTS} agents over ${NODES} nodes (${perNode.join(' / ')}), ${WORKERS_PER_NODE} simulator processes ` +
      `per node; load average ${loadBefore}`,
  );
  const { nodes, natsUrl, database } = await startCluster({
    nodes: NODES,
    agentsPerNode: perNode,
    workersPerNode: WORKERS_PER_NODE,
    connectConcurrency: SETTINGS.connectConcurrency,
    maxHandshakes: SETTINGS.maxHandshakes,
    heartbeatMs: HEARTBEAT_MS,
    svcdNodeArgs: SETTINGS.svcdNodeArgs,
    apiSockets: 1,
    ...(SOURCE_ADDRESSES.length > 0 ? { localAddresses: SOURCE_ADDRESSES } : {}),
  });
  const [first, second] = nodes as [BenchNode, BenchNode];

  const connectStart = performance.now();
  for (const node of nodes) node.fleet.start();
  await Promise.all(
    nodes.map((node) =>
      node.fleet.waitAllConnected(SETTINGS.connectTimeoutS * 1000, (s) => progress(describeFleet(node, s))),
    ),
  );
  const connectSeconds = (performance.now() - connectStart) / 1000;
  for (const node of nodes) await waitCounted(node, AGENTS);
  const listedSeconds = (performance.now() - connectStart) / 1000;
  progress(
    `all ${AGENTS} connected in ${connectSeconds.toFixed(1)} s, counted by every node after ${listedSeconds.toFixed(1)} s`,
  );

  // Client keys in NATS presence: a missing one makes commands through other nodes fail "not connected".
  const presence: Record<string, number | string> = {};
  const countPresence = async (when: string) => {
    presence[when] = await presentClients(natsUrl).catch((err: unknown) => String(err));
    progress(`client keys in NATS presence ${when}: ${presence[when]} (agents ${AGENTS})`);
  };
  await countPresence('after connecting');
  // The steady state is measured, not the connection storm's aftermath: each node reclaims the storm's memory
  // (two full collections 3 s apart, 10 s after its last connection), a pause of hundreds of ms at 10,000 agents.
  progress(`waiting ${SETTLE_AFTER_CONNECT_MS / 1000} s for the nodes' memory reclaim after the connections`);
  await sleep(SETTLE_AFTER_CONNECT_MS);
  const listings = await listingThroughEachNode(nodes, AGENTS, REQUESTS);
  progress(`routing: ${ROUTE_RUNS} round trips each through ${first.id} (owner) and ${second.id}`);
  const routing = await routingOverhead(first, second, ROUTE_RUNS, ROUTE_WARMUP, ROUTE_POLL_MS);
  progress(
    `round trip median ${ms1(routing.viaOwner.p50)} through the owner, ${ms1(routing.viaOther.p50)} through ` +
      `${second.id}: ${routing.ratio.toFixed(2)} ×`,
  );

  await countPresence('before the fan-outs');
  const ids = await fanoutTargets(nodes, FANOUT_CLIENTS);
  progress(`fan-out to ${ids.length} clients through ${first.id}: warm-up run`);
  const warmup = await fanout(first, nodes, ids, POLL_MS);
  progress(
    `warm-up: ${ms(warmup.ms)}; children ${JSON.stringify(warmup.counts)}` +
      warmup.notSuccessful.map((line) => `\n  ${line}`).join(''),
  );
  const runs: FanoutRun[] = [];
  for (let i = 0; i < RUNS; i++) {
    await sleep(1_000);
    const run = await fanout(first, nodes, ids, POLL_MS);
    runs.push(run);
    progress(
      `fan-out ${i + 1}/${RUNS}: ${ms(run.ms)} (POST ${ms(run.postMs)}); children ${JSON.stringify(run.counts)}` +
        run.notSuccessful.map((line) => `\n  ${line}`).join(''),
    );
  }
  const fanoutMedian = median(runs.map((r) => r.ms));
  const notSuccessful = runs.reduce((n, r) => n + ids.length - (r.counts['successful'] ?? 0), 0);
  await countPresence('after the fan-outs');
  const lostWhileHeld = disconnects(nodes);

  const victim = nodes.at(-1) as BenchNode;
  const result = await failover({
    victim,
    survivors: nodes.slice(0, -1),
    statusRate: STATUS_RATE,
    timeoutMs: FAILOVER_TIMEOUT_S * 1000,
  });
  for (const node of nodes.slice(0, -1)) node.fleet.check();

  const worstListing = listings.reduce((a, b) => (b.latency.p99 > a.latency.p99 ? b : a));
  const checks: Check[] = [
    {
      target: `GET ${LIST_PATH} p99 at ${AGENTS} agents, worst node (${worstListing.node})`,
      value: ms1(worstListing.latency.p99),
      limit: `<= ${TARGETS.maxClientsP99Ms} ms`,
      pass: worstListing.latency.p99 <= TARGETS.maxClientsP99Ms,
    },
    {
      target: `fan-out to ${ids.length} clients over ${NODES} nodes, all stored, median of ${RUNS}; children not successful`,
      value: `${ms(fanoutMedian)}; ${notSuccessful}`,
      limit: `<= ${TARGETS.maxFanoutSeconds} s; 0`,
      pass: fanoutMedian <= TARGETS.maxFanoutSeconds * 1000 && notSuccessful === 0,
    },
    {
      target: 'command round trip through a non-owner / through the owner (medians); jobs not successful',
      value: `${routing.ratio.toFixed(2)} ×; ${routing.failed.length}`,
      limit: `<= ${TARGETS.maxRoutingRatio} ×; 0`,
      pass: routing.ratio <= TARGETS.maxRoutingRatio && routing.failed.length === 0,
    },
    ...failoverChecks(result),
  ];
  const rows: string[][] = [
    ['connect time (all agents connected, simulators)', `${connectSeconds.toFixed(1)} s`],
    ['... and counted connected by every node', `${listedSeconds.toFixed(1)} s`],
    ...listings.map((l) => [
      `GET ${LIST_PATH} through ${l.node} (${REQUESTS}) p50 / p90 / p99 / max`,
      [l.latency.p50, l.latency.p90, l.latency.p99, l.latency.max].map(ms1).join(' / '),
    ]),
    [
      `round trip through the owner ${routing.owner} (${ROUTE_RUNS}) p50 / p90 / max`,
      [routing.viaOwner.p50, routing.viaOwner.p90, routing.viaOwner.max].map(ms1).join(' / '),
    ],
    [
      `round trip through ${routing.other} (${ROUTE_RUNS}) p50 / p90 / max`,
      [routing.viaOther.p50, routing.viaOther.p90, routing.viaOther.max].map(ms1).join(' / '),
    ],
    [
      `fan-out to ${ids.length} clients, median / min / max of ${RUNS}`,
      [fanoutMedian, Math.min(...runs.map((r) => r.ms)), Math.max(...runs.map((r) => r.ms))]
        .map(ms)
        .join(' / '),
    ],
    ['fan-out POST /commands alone, median', ms(median(runs.map((r) => r.postMs)))],
    [
      'fan-out children not successful (all runs; first errors)',
      [String(notSuccessful), ...runs.flatMap((r) => r.notSuccessful).slice(0, 3)].join('; '),
    ],
    [
      'round trips whose job did not succeed (first errors)',
      [
        String(routing.failed.length),
        ...routing.failed.slice(0, 3).map((f) => `via ${f.via}: ${f.error}`),
      ].join('; '),
    ],
    ['fan-out warm-up run (not counted)', ms(warmup.ms)],
    ...nodes.map((node) => [
      `svcd CPU per fan-out on ${node.id}, median`,
      ms(median(runs.map((r) => r.cpuMs[node.id] ?? 0))),
    ]),
    [
      'machine CPU per fan-out by process group, median (a 3 s fan-out has 6,000 ms of two cores)',
      machineCpuRow(runs),
    ],
    ['links lost before the kill (should be 0)', String(lostWhileHeld)],
    ...Object.entries(presence).map(([when, n]) => [
      `client keys in NATS presence ${when} (should be ${AGENTS})`,
      String(n),
    ]),
    [`failover: last of ${result.agents} accepted by another node`, seconds(result.reconnectedMs)],
    ['failover: all listed connected through every surviving node', seconds(result.listedMs)],
    [`failover: ${result.victim} gone from /status cluster.nodes`, seconds(result.goneFromStatusMs)],
    [
      'failover: machine CPU by process group from the kill until all were listed',
      cpuRow(result.machineCpuMs),
    ],
    [
      'machine CPU per second by process group before the kill, all agents idle',
      cpuRow(result.idleCpuMsPerSecond),
    ],
    ...result.status.map((s) => [
      `GET /status on ${s.node} meanwhile (${s.count} at ${STATUS_RATE}/s) p50 / p99 / max; not 200; skipped`,
      `${[s.p50, s.p99, s.max].map(ms1).join(' / ')}; ${s.errors}; ${s.skipped}`,
    ]),
    [
      "failed attempts of the killed node's agents while moving",
      Object.entries(result.failures)
        .map(([cause, n]) => `${cause} ${n}`)
        .join(', ') || 'none',
    ],
    ...Object.entries(result.connectedAtEnd).map(([node, n]) => [
      `/status clients_connected on ${node} at the end`,
      String(n),
    ]),
  ];
  const file = await writeResult('cluster', {
    date: new Date().toISOString(),
    settings: {
      ...SETTINGS,
      agents: AGENTS,
      nodes: NODES,
      agentsPerNode: perNode,
      workersPerNode: WORKERS_PER_NODE,
      heartbeatMs: HEARTBEAT_MS,
      requests: REQUESTS,
      routeRuns: ROUTE_RUNS,
      routePollMs: ROUTE_POLL_MS,
      fanoutClients: ids.length,
      runs: RUNS,
      pollMs: POLL_MS,
      statusRate: STATUS_RATE,
      failoverTimeoutS: FAILOVER_TIMEOUT_S,
      natsUrl,
      database,
    },
    machine: machine(),
    targets: TARGETS,
    checks,
    figures: {
      connectSeconds,
      listedSeconds,
      listings,
      routing,
      fanoutMedian,
      warmup,
      runs,
      lostWhileHeld,
      presence,
    },
    failover: result,
    fleets: Object.fromEntries(nodes.map((node) => [node.id, node.fleet.stats()])),
  });
  process.stdout.write(
    [
      '',
      `Cluster: ${AGENTS} simulated agents over ${NODES} svcd nodes (PostgreSQL, nats-server), ` +
        `${WORKERS_PER_NODE} simulator processes per node, heartbeat ${HEARTBEAT_MS} ms ` +
        `(load average before ${loadBefore}, after ${loadAverage()})`,
      '',
      table(['figure', 'value'], rows),
      '',
      checksTable(checks),
      '',
      `results written to ${file}`,
      '',
    ].join('\n'),
  );
  const pass = checks.every((c) => c.pass);
  if (!pass) showNodeLogs(nodes);
  return pass;
}

await runBench(main, SETTINGS.strict);
