/**
 * Failover measure of the cluster bench: one node is killed (SIGKILL) while every agent is connected; its agents
 * go on to the other nodes (their fallback URLs). Timed from the kill: the last of them accepted by another node
 * (the simulators' view), all of them listed connected through every surviving node with a connected_at after
 * the kill, and the killed node gone from /status `cluster.nodes`. Meanwhile GET /status is sent to every
 * surviving node at a steady rate (open loop).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient, type StatusData } from './api-client.js';
import { onCleanUp } from './bench-runner.js';
import { connectedIdsOf, machineGroups } from './cluster-measures.js';
import type { BenchNode } from './cluster-setup.js';
import { RateProbe, summarize, type LatencySummary } from './latency.js';
import { cpuByGroup, cpuByGroupSince } from './proc-stats.js';
import { progress } from './report.js';
import { API_USER } from './svcd-process.js';

export interface FailoverOptions {
  victim: BenchNode;
  survivors: BenchNode[];
  /** GET /status per second on each surviving node. */
  statusRate: number;
  timeoutMs: number;
}

export interface StatusProbe extends LatencySummary {
  node: string;
  /** Answers other than 200, network errors and timeouts included. */
  errors: number;
  /** Requests not sent because 50 were outstanding. */
  skipped: number;
}

export interface FailoverResult {
  victim: string;
  agents: number;
  /** From the kill; undefined when not reached within the timeout. */
  reconnectedMs: number | undefined;
  listedMs: number | undefined;
  goneFromStatusMs: number | undefined;
  status: StatusProbe[];
  /** What the victim's agents met while moving: failed attempts by cause, since the kill. */
  failures: Record<string, number>;
  /** GET /status clients_connected of each surviving node at the end. */
  connectedAtEnd: Record<string, number>;
  /** CPU time (ms) by process group from the kill until all were listed (or the timeout): where the move went. */
  machineCpuMs: Record<string, number>;
  /** CPU time (ms per second) by process group over IDLE_WINDOW_MS before the kill: the part of the above that
   * 20,000 agents merely staying connected would cost anyway. */
  idleCpuMsPerSecond: Record<string, number>;
}

/** Full listings (every victim agent, 500 per page) at most this often. */
const LISTING_EVERY_MS = 1_000;
const LOOP_MS = 250;
/** Quiet time before the kill over which the machine's idle CPU by group is read, after a settling time in which
 * the memory reclaim after the fan-outs (two collections 3 s apart, after 3 s of quiet) is done. */
const IDLE_WINDOW_MS = 10_000;
const IDLE_SETTLE_MS = 8_000;

/** Every agent of the victim listed connected through `node` since `since` (Date.now() scale). */
async function allListedSince(
  node: BenchNode,
  prefix: string,
  agents: number,
  since: number,
): Promise<boolean> {
  const listed = await connectedIdsOf(node.api, prefix);
  const moved = listed.filter((c) => c.connected_at !== null && Date.parse(c.connected_at) >= since);
  return moved.length === agents;
}

async function stillListsVictim(node: BenchNode, victim: string): Promise<boolean> {
  const status = (
    await node.api.getJson<StatusData & { cluster?: { nodes: { node_id: string }[] } }>('/status')
  ).data;
  return (status.cluster?.nodes ?? []).some((n) => n.node_id === victim);
}

function failuresSince(
  before: Record<string, number>,
  after: Record<string, number>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [cause, n] of Object.entries(after))
    if (n > (before[cause] ?? 0)) out[cause] = n - (before[cause] ?? 0);
  return out;
}

async function idleCpu(groupOf: Parameters<typeof cpuByGroup>[0]): Promise<Record<string, number>> {
  progress(
    `reading the machine's idle CPU for ${IDLE_WINDOW_MS / 1000} s, after ${IDLE_SETTLE_MS / 1000} s to settle`,
  );
  await sleep(IDLE_SETTLE_MS);
  const before = cpuByGroup(groupOf);
  await sleep(IDLE_WINDOW_MS);
  return Object.fromEntries(
    Object.entries(cpuByGroupSince(before, groupOf)).map(([group, ms]) => [
      group,
      // A group whose processes ended in the window (PostgreSQL backends) would read negative.
      Math.max(0, (ms * 1000) / IDLE_WINDOW_MS),
    ]),
  );
}

export async function failover(options: FailoverOptions): Promise<FailoverResult> {
  const { victim, survivors } = options;
  const prefix = victim.agentPrefix;
  const probes = await Promise.all(
    survivors.map(async (node) => {
      const api = new ApiClient(node.svcd.apiBase, 8);
      onCleanUp(() => api.close());
      await api.login(API_USER.name, API_USER.password, 3600);
      return { node: node.id, probe: new RateProbe(api, '/status', options.statusRate) };
    }),
  );
  const fleets = [victim, ...survivors].map((node) => node.fleet);
  const idleCpuMsPerSecond = await idleCpu(machineGroups([victim, ...survivors]));
  const failuresBefore = victim.fleet.stats().failures;
  const markAt = await victim.fleet.mark();
  for (const { probe } of probes) probe.start();
  const killAt = Date.now();
  progress(`SIGKILL to ${victim.id} holding ${victim.agents} agents`);
  await victim.svcd.kill();
  const groupOf = machineGroups(survivors);
  const machineBefore = cpuByGroup(groupOf);
  let machineCpuMs: Record<string, number> = {};

  let reconnectedAt: number | undefined;
  let listedAt: number | undefined;
  let goneAt: number | undefined;
  let lastListing = 0;
  let lastProgress = 0;
  try {
    while (Date.now() < killAt + options.timeoutMs && (listedAt === undefined || goneAt === undefined)) {
      for (const fleet of fleets) fleet.check();
      const stats = victim.fleet.stats();
      if (reconnectedAt === undefined && stats.connectedSinceMark >= victim.agents)
        reconnectedAt = stats.lastConnectAt;
      if (goneAt === undefined && !(await stillListsVictim(survivors[0] as BenchNode, victim.id)))
        goneAt = Date.now();
      if (
        reconnectedAt !== undefined &&
        listedAt === undefined &&
        Date.now() - lastListing >= LISTING_EVERY_MS
      ) {
        lastListing = Date.now();
        const listed = await Promise.all(
          survivors.map((node) => allListedSince(node, prefix, victim.agents, markAt)),
        );
        if (listed.every(Boolean)) listedAt = Date.now();
      }
      if (Date.now() - lastProgress >= 2_000) {
        lastProgress = Date.now();
        progress(
          `${((Date.now() - killAt) / 1000).toFixed(1)} s after the kill: ${stats.connectedSinceMark}/${victim.agents} ` +
            `reconnected elsewhere (${stats.handshaking} handshaking, ${stats.backingOff} backing off)` +
            `${listedAt ? ', all listed' : ''}${goneAt ? `, ${victim.id} gone from /status` : ''}`,
        );
      }
      await sleep(LOOP_MS);
    }
  } finally {
    machineCpuMs = cpuByGroupSince(machineBefore, groupOf);
    for (const { probe } of probes) await probe.stop();
  }
  const connectedAtEnd: Record<string, number> = {};
  for (const node of survivors)
    connectedAtEnd[node.id] = (await node.api.getJson<StatusData>('/status')).data.clients_connected;
  const since = (at: number | undefined) => (at === undefined ? undefined : at - killAt);
  return {
    victim: victim.id,
    agents: victim.agents,
    reconnectedMs: since(reconnectedAt),
    listedMs: since(listedAt),
    goneFromStatusMs: since(goneAt),
    status: probes.map(({ node, probe }) => ({
      node,
      ...summarize(probe.samples.map((s) => s.ms)),
      errors: probe.samples.filter((s) => s.status !== 200).length,
      skipped: probe.skipped,
    })),
    failures: failuresSince(failuresBefore, victim.fleet.stats().failures),
    connectedAtEnd,
    machineCpuMs,
    idleCpuMsPerSecond,
  };
}
