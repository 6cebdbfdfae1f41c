/**
 * The idle curve past one node (issue 30 §4): one svcd holds about 19,000 agents on this machine (its open-file
 * limit, 20,000, cannot be raised here), so 50,000 idle agents need several nodes. The cluster of the cluster
 * bench (bench/support/cluster-setup.ts: its own nats-server with JetStream, a fresh PostgreSQL database, BENCH_NODES
 * svcd nodes with their metrics served) is filled in stages (BENCH_CURVE, then BENCH_AGENTS in all), the agents of
 * each stage spread evenly over the nodes and connecting from BENCH_SOURCE_ADDRESSES in turn. At each stage, per
 * node and in all (bench/support/idle-cluster-stage.ts, with the one-node curve's measurements of
 * bench/support/idle-measures.ts): agents held, svcd RSS per agent, GET /clients?page[limit]=50 and GET /status
 * p99 through each node, each node's event-loop delay meanwhile, the time to connect the stage; and whether the
 * cluster sees every agent: the connected clients each node counts (/status) and lists (/clients), a no-op
 * command to BENCH_PROBE_CLIENTS agents sampled from every node sent through each node, and the client keys in
 * NATS presence. Anything missed is said plainly (and fails a check), never waited for without end. At the end the
 * last node is stopped gracefully (SIGTERM: it drains for up to BENCH_DRAIN_TIMEOUT) and the bench reports the
 * stop time and where its agents went (bench/support/idle-cluster-stop.ts).
 *
 *   npm run build && npm run bench:idle-cluster
 *   BENCH_AGENTS=3000 BENCH_CURVE=1500 BENCH_SETTLE_SECONDS=5 BENCH_REQUESTS=100 nice -n 19 npm run bench:idle-cluster
 *                                                                                    (a smoke run)
 *
 * Environment: BENCH_AGENTS (50000 in all at the last stage), BENCH_NODES (3; one is stopped at the end),
 * BENCH_CURVE (15000,30000: totals of the stages before BENCH_AGENTS), BENCH_WORKERS_PER_NODE (1 simulator process
 * per node and stage), BENCH_SOURCE_ADDRESSES (127.0.0.2-127.0.0.5: addresses or ranges, comma-separated; `none`
 * = the system's choice, 127.0.0.1), BENCH_REQUESTS (300 of each request per node and stage), BENCH_SETTLE_SECONDS
 * (20 s of RSS samples per stage), BENCH_PROBE_CLIENTS (300; 0 = no command probe), BENCH_POLL_MS (20),
 * BENCH_COUNTED_TIMEOUT (120 s for every node to count every agent), BENCH_DRAIN_TIMEOUT (30 s: `[cluster]
 * drain_timeout`), BENCH_MOVE_TIMEOUT (120 s after the stopped node's exit for its agents to be placed and counted),
 * BENCH_HEARTBEAT_MS (5000), BENCH_CONNECT_CONCURRENCY (32 first attempts in flight per node),
 * BENCH_CONNECT_TIMEOUT (900 s per stage), BENCH_MAX_HANDSHAKES, BENCH_SVCD_NODE_ARGS, BENCH_STRICT=1 (exit 1 when
 * a target fails). Needs nats-server on the PATH and PostgreSQL at 127.0.0.1:5432 (trust).
 */
import { ApiClient } from './support/api-client.js';
import { onCleanUp, runBench } from './support/bench-runner.js';
import { envNumber } from './support/child-processes.js';
import {
  checkClusterPlan,
  showNodeLogs,
  spread,
  startCluster,
  type BenchNode,
} from './support/cluster-setup.js';
import { runStage, stageMisses, type ClusterStage, type CurveState } from './support/idle-cluster-stage.js';
import { stopOneNode, type StopResult } from './support/idle-cluster-stop.js';
import {
  CURVE_TARGETS,
  LIST_PATH,
  SETTLED_SAMPLES,
  settledRss,
  stageCells,
  stageChecks,
  STAGE_HEADERS,
  type DescriptorStatus,
  type StageFigures,
} from './support/idle-measures.js';
import { sequentialLatencies } from './support/latency.js';
import { envSteps, loadSettings } from './support/load-settings.js';
import {
  checksTable,
  loadAverage,
  machine,
  progress,
  table,
  writeResult,
  type Check,
} from './support/report.js';
import { ephemeralPorts, parseSourceAddresses } from './support/source-addresses.js';

// BENCH_CLIENTS and BENCH_WORKERS are not used here: BENCH_AGENTS and BENCH_WORKERS_PER_NODE instead.
const { clients: _clients, workers: _workers, ...SETTINGS } = loadSettings(0);
const orZero = (name: string, fallback: number, max: number) =>
  process.env[name] === '0' ? 0 : envNumber(name, fallback, max);
const AGENTS = envNumber('BENCH_AGENTS', 50_000, 200_000);
const NODES = envNumber('BENCH_NODES', 3, 9);
const STEPS = envSteps('BENCH_CURVE', [15_000, 30_000]).filter((n) => n < AGENTS);
const WORKERS_PER_NODE = envNumber('BENCH_WORKERS_PER_NODE', 1, 16);
const SOURCE_ADDRESSES = parseSourceAddresses(process.env['BENCH_SOURCE_ADDRESSES'] ?? '127.0.0.2-127.0.0.5');
const REQUESTS = envNumber('BENCH_REQUESTS', 300, 100_000);
const SETTLE_SECONDS = envNumber('BENCH_SETTLE_SECONDS', 20, 3600);
const PROBE_CLIENTS = orZero('BENCH_PROBE_CLIENTS', 300, 100_000);
const POLL_MS = envNumber('BENCH_POLL_MS', 20, 10_000);
const COUNTED_TIMEOUT_S = envNumber('BENCH_COUNTED_TIMEOUT', 120, 3600);
const DRAIN_TIMEOUT_S = orZero('BENCH_DRAIN_TIMEOUT', 30, 600);
const MOVE_TIMEOUT_S = envNumber('BENCH_MOVE_TIMEOUT', 120, 3600);
const HEARTBEAT_MS = envNumber('BENCH_HEARTBEAT_MS', 5_000, 60_000);
/** Beyond the drain, how long a stopping node may take to exit before it is killed. */
const EXIT_GRACE_MS = 60_000;
/** Descriptors of a node left unused by the plan (the API clients', the scraper's, the database's). */
const DESCRIPTOR_MARGIN = 50;
const WARMUP_REQUESTS = 30;

const mib = (kib: number) => `${(kib / 1024).toFixed(1)} MiB`;
const secs = (s: number | undefined, timeout: number) =>
  s === undefined ? `not within ${timeout} s` : `${s.toFixed(1)} s`;

interface NodeBaseline {
  rssKiB: number;
  descriptorsUsed: number;
  limit: number | null;
  /** Agents the node can take before it refuses them with 503. */
  room: number;
}

/** Each node's RSS and descriptors before any agent (after warming its API paths up). */
async function baselines(nodes: BenchNode[]): Promise<NodeBaseline[]> {
  for (const node of nodes) {
    await sequentialLatencies(node.api, LIST_PATH, WARMUP_REQUESTS);
    await sequentialLatencies(node.api, '/status', WARMUP_REQUESTS);
  }
  const rss = await settledRss(
    nodes.map((node) => node.svcd),
    SETTLED_SAMPLES,
  );
  return Promise.all(
    nodes.map(async (node, i) => {
      const s = (await node.api.getJson<DescriptorStatus>('/status')).data;
      const used = s.descriptors_used ?? 0;
      const highWater = s.descriptors_agent_high_water ?? Number.MAX_SAFE_INTEGER;
      return {
        rssKiB: rss[i] ?? 0,
        descriptorsUsed: used,
        limit: s.descriptors_limit,
        room: highWater - used - DESCRIPTOR_MARGIN,
      };
    }),
  );
}

/** The 'all' row of a stage: sums, RSS per agent over every node, the worst node's latencies. */
function allNodes(stage: ClusterStage, before: NodeBaseline[]): StageFigures {
  const worst = (pick: (n: StageFigures) => { p99: number }) =>
    stage.nodes.reduce((a, b) => (pick(b).p99 > pick(a).p99 ? b : a));
  const sum = (pick: (n: StageFigures) => number) => stage.nodes.reduce((n, s) => n + pick(s), 0);
  const rssKiB = sum((n) => n.rssKiB);
  return {
    agents: sum((n) => n.agents),
    listed: stage.total,
    rssKiB,
    rssPerAgentKiB: (rssKiB - before.reduce((n, b) => n + b.rssKiB, 0)) / stage.total,
    clientsMs: worst((n) => n.clientsMs).clientsMs,
    statusMs: worst((n) => n.statusMs).statusMs,
    eventLoopP99Ms: Math.max(...stage.nodes.map((n) => n.eventLoopP99Ms)),
    eventLoopMaxMs: Math.max(...stage.nodes.map((n) => n.eventLoopMaxMs)),
    descriptorsUsed: sum((n) => n.descriptorsUsed),
    clientsConnected: Math.min(...stage.nodes.map((n) => n.clientsConnected)),
  };
}

function stageTable(stages: ClusterStage[], before: NodeBaseline[]): string {
  const limit = before[0]?.limit ?? null;
  const rows = stages.flatMap((stage) => [
    ...stage.nodes.map((n) => [
      String(stage.total),
      n.node,
      String(n.agents),
      `${n.connectSeconds.toFixed(1)} s`,
      ...stageCells(n, limit),
      `${n.clientsConnected} / ${n.listedConnected}`,
      n.probe ? `${n.probe.successful} / ${n.probe.sent}` : '-',
    ]),
    [
      String(stage.total),
      'all (latencies: worst node)',
      String(stage.nodes.reduce((n, s) => n + s.agents, 0)),
      `${stage.connectSeconds.toFixed(1)} s`,
      ...stageCells(allNodes(stage, before), limit === null ? null : limit * stage.nodes.length),
      `presence keys ${stage.presenceKeys}`,
      '',
    ],
  ]);
  return table(
    [
      'agents in all',
      'node',
      'holds',
      'connect (stage)',
      ...STAGE_HEADERS,
      'counts / lists connected',
      'command reached',
    ],
    rows,
  );
}

function stopRows(stop: StopResult): string[][] {
  return [
    [
      `graceful stop of ${stop.node} holding ${stop.agents} agents (SIGTERM to exit)`,
      `${stop.stopSeconds.toFixed(1)} s${stop.killed ? ' (killed after the grace time)' : ''}`,
    ],
    [`${stop.node}'s own CPU meanwhile`, `${stop.stopCpuSeconds?.toFixed(1) ?? '?'} s`],
    ['sessions it ended asking the agent to reconnect', String(stop.askedToReconnect)],
    [
      `${stop.node}'s drain (its log)`,
      stop.drainTimedOut
        ? `timed out after ${(stop.drainTimedOut.duration_ms / 1000).toFixed(1)} s: ${stop.drainTimedOut.moved} of ` +
          `${stop.drainTimedOut.clients} moved, ${stop.drainTimedOut.not_moved} not`
        : stop.killed
          ? 'killed before it ended'
          : 'every agent moved (no timeout warning)',
    ],
    [
      'every agent connected to another node (from SIGTERM)',
      secs(stop.placedSeconds, MOVE_TIMEOUT_S + DRAIN_TIMEOUT_S),
    ],
    [
      'every surviving node counts all connected (from SIGTERM)',
      secs(stop.countedSeconds, MOVE_TIMEOUT_S + DRAIN_TIMEOUT_S),
    ],
    ...stop.moves.map((m) => [
      `${m.node}: agents before → after (gained)`,
      `${m.before} → ${m.after} (+${m.gained})`,
    ]),
    ['agents connected nowhere at the end', String(stop.notPlaced)],
    [
      'failed attempts of the moving agents (cause: count)',
      Object.entries(stop.failures)
        .map(([cause, n]) => `${cause}: ${n}`)
        .join(', ') || 'none',
    ],
    ...Object.entries(stop.countedAtEnd).map(([node, n]) => [
      `/status clients_connected on ${node} at the end`,
      String(n),
    ]),
  ];
}

function checksOf(stages: ClusterStage[], stop: StopResult): Check[] {
  const first = stages[0] as ClusterStage;
  const last = stages.at(-1) as ClusterStage;
  const perNode = last.nodes.flatMap((n, i) => stageChecks(first.nodes[i] as StageFigures, n, n.node));
  const seen = stages.flatMap((s) =>
    s.nodes.filter((n) => n.clientsConnected !== s.total || n.listedConnected !== s.total),
  );
  const probes = stages.flatMap((s) => s.nodes.flatMap((n) => (n.probe ? [n.probe] : [])));
  const missedCommands = probes.reduce((n, p) => n + p.sent - p.successful, 0);
  const keys = stages.filter((s) => s.presenceKeys !== s.total);
  return [
    {
      target: `agents connected in all over ${NODES} nodes`,
      value: String(last.nodes.reduce((n, s) => n + s.agents, 0)),
      limit: `= ${AGENTS}`,
      pass: last.nodes.reduce((n, s) => n + s.agents, 0) === AGENTS,
    },
    ...perNode,
    {
      target: 'every node counts (/status) and lists (/clients) every connected agent, at every stage',
      value: seen.length === 0 ? 'yes' : `${seen.length} node-stages miss some`,
      limit: 'yes',
      pass: seen.length === 0,
    },
    {
      target: `a command through each node reaches ${PROBE_CLIENTS} agents sampled from every node`,
      value: `${missedCommands} missed of ${probes.reduce((n, p) => n + p.sent, 0)}`,
      limit: '0 missed',
      pass: missedCommands === 0,
    },
    {
      target: 'client keys in NATS presence = agents connected, at every stage',
      value: keys.length === 0 ? 'yes' : keys.map((s) => `${s.presenceKeys} at ${s.total}`).join('; '),
      limit: 'yes',
      pass: keys.length === 0,
    },
    {
      target: `graceful stop of ${stop.node} with ${stop.agents} agents (drains first)`,
      value: `${stop.stopSeconds.toFixed(1)} s`,
      limit: `<= ${CURVE_TARGETS.maxStopSeconds} s`,
      pass: stop.stopSeconds <= CURVE_TARGETS.maxStopSeconds && !stop.killed,
    },
    {
      target: `${stop.node}'s agents connected to the other nodes`,
      value: `${stop.agents - stop.notPlaced} of ${stop.agents}`,
      limit: `${stop.agents} of ${stop.agents}`,
      pass: stop.notPlaced === 0,
    },
  ];
}

async function main(): Promise<boolean> {
  await checkClusterPlan(NODES, AGENTS, SOURCE_ADDRESSES, 'one is stopped at the end');
  const loadBefore = loadAverage();
  const totals = [...STEPS, AGENTS];
  progress(
    `${AGENTS} agents over ${NODES} nodes in stages of ${totals.join(', ')} in all, from ` +
      `${SOURCE_ADDRESSES.length > 0 ? SOURCE_ADDRESSES.join(', ') : 'the system-chosen source address'} ` +
      `(ephemeral ports ${ephemeralPorts().count} per address); load average ${loadBefore}`,
  );
  const { nodes, natsUrl, database } = await startCluster({
    nodes: NODES,
    // The cluster bench's own fleets stay empty: each stage adds fleets of its own (BenchNode.newFleet).
    agentsPerNode: Array.from({ length: NODES }, () => 0),
    workersPerNode: WORKERS_PER_NODE,
    connectConcurrency: SETTINGS.connectConcurrency,
    maxHandshakes: SETTINGS.maxHandshakes,
    heartbeatMs: HEARTBEAT_MS,
    svcdNodeArgs: SETTINGS.svcdNodeArgs,
    apiSockets: 1,
    metrics: true,
    drainTimeoutS: DRAIN_TIMEOUT_S,
    ...(SOURCE_ADDRESSES.length > 0 ? { localAddresses: SOURCE_ADDRESSES } : {}),
  });
  const scrapers = nodes.map((node) => {
    const scraper = new ApiClient(node.svcd.metricsUrl, 1);
    onCleanUp(() => scraper.close());
    return scraper;
  });
  const before = await baselines(nodes);
  const perNode = spread(AGENTS, NODES);
  for (const [i, node] of nodes.entries()) {
    const b = before[i] as NodeBaseline;
    progress(
      `${node.id}: RSS ${mib(b.rssKiB)} before any agent, ${b.descriptorsUsed} of ${b.limit ?? '?'} descriptors, ` +
        `room for ${b.room} agents`,
    );
    if ((perNode[i] ?? 0) > b.room)
      throw new Error(
        `${node.id} would hold ${perNode[i] ?? 0} agents but has room for ${b.room} below its descriptor high-water mark (open-file limit ` +
          `${b.limit ?? '?'}): use more nodes (BENCH_NODES) or fewer agents`,
      );
  }
  const survivorsRoom = before.slice(0, -1).reduce((n, b) => n + b.room, 0);
  const notPlacedExpected = Math.max(0, AGENTS - survivorsRoom);
  if (notPlacedExpected > 0)
    progress(
      `note: after the stop the other ${NODES - 1} nodes have room for ${survivorsRoom} agents: about ` +
        `${notPlacedExpected} of the stopped node's agents will find no place (503)`,
    );

  const state: CurveState = {
    nodes,
    scrapers,
    rssBeforeKiB: before.map((b) => b.rssKiB),
    fleets: [],
    started: nodes.map(() => 0),
    natsUrl,
  };
  const stages: ClusterStage[] = [];
  for (const [k, total] of totals.entries())
    stages.push(
      await runStage(state, k, total, {
        workersPerNode: WORKERS_PER_NODE,
        connectTimeoutS: SETTINGS.connectTimeoutS,
        countedTimeoutMs: COUNTED_TIMEOUT_S * 1000,
        settleSeconds: SETTLE_SECONDS,
        requests: REQUESTS,
        probeClients: PROBE_CLIENTS,
        pollMs: POLL_MS,
      }),
    );
  const stop = await stopOneNode({
    victim: nodes.at(-1) as BenchNode,
    survivors: nodes.slice(0, -1),
    fleets: state.fleets,
    total: AGENTS,
    graceMs: DRAIN_TIMEOUT_S * 1000 + EXIT_GRACE_MS,
    moveTimeoutMs: MOVE_TIMEOUT_S * 1000,
  });

  const checks = checksOf(stages, stop);
  const misses = stages.flatMap((s) => stageMisses(s).map((line) => `at ${s.total} in all: ${line}`));
  const file = await writeResult('idle-cluster', {
    date: new Date().toISOString(),
    settings: {
      ...SETTINGS,
      agents: AGENTS,
      nodes: NODES,
      stages: totals,
      workersPerNode: WORKERS_PER_NODE,
      sourceAddresses: SOURCE_ADDRESSES,
      requests: REQUESTS,
      settleSeconds: SETTLE_SECONDS,
      probeClients: PROBE_CLIENTS,
      heartbeatMs: HEARTBEAT_MS,
      drainTimeoutS: DRAIN_TIMEOUT_S,
      natsUrl,
      database,
    },
    machine: machine(),
    targets: CURVE_TARGETS,
    checks,
    before,
    stages,
    misses,
    stop,
    notPlacedExpected,
  });
  const pass = checks.every((c) => c.pass);
  process.stdout.write(
    [
      '',
      `Idle agents over ${NODES} svcd nodes (PostgreSQL, nats-server): ${AGENTS} in all, ` +
        `${WORKERS_PER_NODE} simulator process(es) per node and stage, from ${SOURCE_ADDRESSES.length || 'the default'} ` +
        `source address(es); heartbeat ${HEARTBEAT_MS} ms (load average before ${loadBefore}, after ${loadAverage()})`,
      '',
      stageTable(stages, before),
      '',
      misses.length === 0
        ? 'Every node counted, listed and reached (commands) every connected agent at every stage.'
        : ['MISSED: the cluster does not see every connected agent:', ...misses.map((m) => `  ${m}`)].join(
            '\n',
          ),
      '',
      table(['graceful stop', 'value'], stopRows(stop)),
      ...(notPlacedExpected > 0
        ? [
            `(the surviving nodes had room for ${survivorsRoom} agents: ${notPlacedExpected} could not be placed)`,
          ]
        : []),
      '',
      checksTable(checks),
      '',
      `results written to ${file}`,
      '',
    ].join('\n'),
  );
  if (!pass) showNodeLogs(nodes);
  return pass;
}

await runBench(main, SETTINGS.strict);
