/**
 * The graceful stop of one node of a full cluster (idle-cluster.bench.ts): SIGTERM to the node, which drains
 * (stops taking agents, asks each to reconnect, waits up to `[cluster] drain_timeout` for them to be held
 * elsewhere) and exits. Timed from the signal: the exit (and the node's own CPU meanwhile), every agent connected
 * to another node (the simulators' view), every surviving node counting them all (/status); and where they went:
 * the agents each surviving node held before and after, what the moving agents met, and how many found no place.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { StatusData } from './api-client.js';
import type { BenchNode } from './cluster-setup.js';
import { heldByUrl } from './idle-cluster-stage.js';
import { cpuWhile } from './proc-stats.js';
import { progress } from './report.js';
import type { SimulatorFleet } from './simulator-fleet.js';

export interface StopOptions {
  victim: BenchNode;
  survivors: BenchNode[];
  /** Every fleet of every node. */
  fleets: SimulatorFleet[];
  /** Agents connected in all. */
  total: number;
  /** How long the node may take to exit after SIGTERM before it is killed. */
  graceMs: number;
  /** How long, after the exit, the agents may take to be connected and counted elsewhere. */
  moveTimeoutMs: number;
}

export interface StopResult {
  node: string;
  /** Agents the node held when it was told to stop. */
  agents: number;
  stopSeconds: number;
  stopCpuSeconds: number | undefined;
  /** The node did not exit within graceMs and was killed. */
  killed: boolean;
  /** From SIGTERM until no agent was connected to the node any more and all were connected elsewhere. */
  placedSeconds: number | undefined;
  /** From SIGTERM until every surviving node counted every agent connected. */
  countedSeconds: number | undefined;
  /** Agents per surviving node before and after (the simulators' view), and the difference. */
  moves: { node: string; before: number; after: number; gained: number }[];
  /** Agents connected nowhere at the end. */
  notPlaced: number;
  /** Sessions the node ended with `reconnect` (its drain) rather than by closing. */
  askedToReconnect: number;
  /** Failed attempts of the moving agents, by cause, since the signal. */
  failures: Record<string, number>;
  /** GET /status clients_connected of each surviving node at the end. */
  countedAtEnd: Record<string, number>;
  /**
   * The node's own word on its drain when it ran out of `drain_timeout` (its warning; the bench's nodes log
   * warnings and errors only, so a drain that moved every agent leaves none).
   */
  drainTimedOut: { clients: number; moved: number; not_moved: number; duration_ms: number } | undefined;
}

const LOOP_MS = 250;
const DRAIN_TIMEOUT_LOG = 'drain timeout passed before every agent moved to another node';

/** The drain's timeout warning among the node's last output lines (JSON logs), if there is one. */
function drainWarning(output: string): StopResult['drainTimedOut'] {
  for (const line of output.split('\n').reverse()) {
    if (!line.includes(DRAIN_TIMEOUT_LOG)) continue;
    try {
      const { clients, moved, not_moved, duration_ms } = JSON.parse(line) as Record<string, number>;
      return {
        clients: clients ?? 0,
        moved: moved ?? 0,
        not_moved: not_moved ?? 0,
        duration_ms: duration_ms ?? 0,
      };
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function sums(fleets: SimulatorFleet[]) {
  const failures: Record<string, number> = {};
  let connected = 0;
  let asked = 0;
  for (const fleet of fleets) {
    const s = fleet.stats();
    connected += s.connected;
    asked += s.reconnectsAsked;
    for (const [cause, n] of Object.entries(s.failures)) failures[cause] = (failures[cause] ?? 0) + n;
  }
  return { failures, connected, asked };
}

async function counts(nodes: BenchNode[]): Promise<number[]> {
  return Promise.all(
    nodes.map(async (node) => (await node.api.getJson<StatusData>('/status')).data.clients_connected),
  );
}

export async function stopOneNode(options: StopOptions): Promise<StopResult> {
  const { victim, survivors, fleets, total } = options;
  const url = victim.svcd.agentUrl;
  const before = heldByUrl(fleets);
  const sumsBefore = sums(fleets);
  const agents = before[url] ?? 0;
  progress(`SIGTERM to ${victim.id} holding ${agents} agents`);
  const signalAt = performance.now();
  let placedAt: number | undefined;
  let countedAt: number | undefined;
  const placed = () => {
    const held = heldByUrl(fleets);
    return (held[url] ?? 0) <= 0 && sums(fleets).connected === total;
  };
  let stopped = false;
  const stopping = cpuWhile(victim.svcd.pid, () => victim.svcd.stop(options.graceMs)).finally(() => {
    stopped = true;
  });
  let lastProgress = 0;
  let stopDoneAt: number | undefined;
  for (;;) {
    for (const fleet of fleets) fleet.check();
    if (placedAt === undefined && placed()) placedAt = performance.now();
    if (stopped && stopDoneAt === undefined) stopDoneAt = performance.now();
    // The survivors count the whole cluster: their count tells of the moved agents only once all are placed.
    if (placedAt !== undefined && countedAt === undefined) {
      const now = await counts(survivors);
      if (now.every((n) => n === total)) countedAt = performance.now();
    }
    if (stopped && placedAt !== undefined && countedAt !== undefined) break;
    if (stopDoneAt !== undefined && performance.now() - stopDoneAt > options.moveTimeoutMs) break;
    if (performance.now() - lastProgress >= 2_000) {
      lastProgress = performance.now();
      const held = heldByUrl(fleets);
      progress(
        `${((performance.now() - signalAt) / 1000).toFixed(1)} s after SIGTERM: ${victim.id} ` +
          `${stopped ? 'has exited' : 'is stopping'}, holds ${held[url] ?? 0}; ` +
          survivors.map((node) => `${node.id} ${held[node.svcd.agentUrl] ?? 0}`).join(', '),
      );
    }
    await sleep(LOOP_MS);
  }
  const stop = await stopping;
  const after = heldByUrl(fleets);
  const sumsAfter = sums(fleets);
  const failures: Record<string, number> = {};
  for (const [cause, n] of Object.entries(sumsAfter.failures))
    if (n > (sumsBefore.failures[cause] ?? 0)) failures[cause] = n - (sumsBefore.failures[cause] ?? 0);
  const end = await counts(survivors);
  const since = (at: number | undefined) => (at === undefined ? undefined : (at - signalAt) / 1000);
  return {
    node: victim.id,
    agents,
    stopSeconds: stop.wallMs / 1000,
    stopCpuSeconds: stop.cpuMs === undefined ? undefined : stop.cpuMs / 1000,
    killed: victim.svcd.child?.proc.signalCode === 'SIGKILL',
    placedSeconds: since(placedAt),
    countedSeconds: since(countedAt),
    moves: survivors.map((node) => {
      const [b, a] = [before[node.svcd.agentUrl] ?? 0, after[node.svcd.agentUrl] ?? 0];
      return { node: node.id, before: b, after: a, gained: a - b };
    }),
    notPlaced: total - sumsAfter.connected,
    askedToReconnect: sumsAfter.asked - sumsBefore.asked,
    failures,
    countedAtEnd: Object.fromEntries(survivors.map((node, i) => [node.id, end[i] ?? 0])),
    drainTimedOut: drainWarning(victim.svcd.child?.tail() ?? ''),
  };
}
