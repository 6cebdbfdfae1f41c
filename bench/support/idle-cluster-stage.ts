/**
 * One stage of the idle curve over several cluster nodes (idle-cluster.bench.ts): more simulated agents spread
 * evenly over the nodes until `total` are connected, then per node the measurements of idle-measures.ts, and what
 * the cluster shows of them: the clients each node counts (/status) and lists connected (/clients), a command to a
 * sample of every node's agents through each node, and the client keys in NATS presence. A node that counts,
 * lists or reaches fewer clients than are connected is reported, not waited for forever: that is a finding.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient, StatusData } from './api-client.js';
import { fanout } from './cluster-measures.js';
import { spread, type BenchNode } from './cluster-setup.js';
import { measureRequests, settledRss, type RequestMeasure, type StageFigures } from './idle-measures.js';
import { presentClients } from './presence-count.js';
import { progress } from './report.js';
import type { SimulatorFleet } from './simulator-fleet.js';

export interface CurveState {
  nodes: BenchNode[];
  /** svcd's metrics of each node (same order as nodes). */
  scrapers: ApiClient[];
  /** VmRSS of each node before any agent, KiB. */
  rssBeforeKiB: number[];
  /** Every fleet started so far, all stages. */
  fleets: SimulatorFleet[];
  /** Agents started per node so far. */
  started: number[];
  natsUrl: string;
}

export interface StageSettings {
  workersPerNode: number;
  connectTimeoutS: number;
  /** How long every node may take to count every agent once the simulators have them connected. */
  countedTimeoutMs: number;
  settleSeconds: number;
  requests: number;
  /** Agents a command is sent to through each node (0 = none). */
  probeClients: number;
  pollMs: number;
}

/** What a command sent through one node to sampled agents of every node came to. */
export interface CommandProbe {
  sent: number;
  successful: number;
  /** A few children that did not succeed (`client_id: status: error`), or why the run failed. */
  missed: string[];
}

export interface NodeStage extends StageFigures {
  node: string;
  /** Seconds until this node's new agents of the stage were all connected. */
  connectSeconds: number;
  /** Clients GET /clients?filter[connection_state]=connected counts through this node. */
  listedConnected: number;
  probe: CommandProbe | undefined;
}

export interface ClusterStage {
  total: number;
  /** Until the simulators had every agent connected. */
  connectSeconds: number;
  /** Until every node counted `total` connected (/status); undefined when not within the timeout. */
  countedSeconds: number | undefined;
  nodes: NodeStage[];
  /** Client keys in NATS presence, or why they could not be counted. */
  presenceKeys: number | string;
}

/** Connected agents per agent URL, over every fleet (the simulators' view of where each agent is). */
export function heldByUrl(fleets: SimulatorFleet[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const fleet of fleets)
    for (const [url, n] of Object.entries(fleet.stats().connectedByUrl)) out[url] = (out[url] ?? 0) + n;
  return out;
}

/** `count` client ids taken evenly from every fleet's agents (whether or not the cluster lists them). */
function sampleIds(fleets: SimulatorFleet[], count: number): string[] {
  const all = fleets.flatMap((fleet) => fleet.clientIds());
  if (count >= all.length) return all;
  const step = all.length / count;
  return Array.from({ length: count }, (_, i) => all[Math.floor(i * step)] as string);
}

/** Polls every node's /status until each counts `total` connected, at most `timeoutMs`. */
async function waitCounted(nodes: BenchNode[], total: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const counts = await Promise.all(
      nodes.map(async (node) => (await node.api.getJson<StatusData>('/status')).data.clients_connected),
    );
    if (counts.every((n) => n === total)) return true;
    if (Date.now() > deadline) {
      progress(`not every node counts ${total} connected after ${timeoutMs / 1000} s: ${counts.join(' / ')}`);
      return false;
    }
    await sleep(500);
  }
}

async function listedConnected(api: ApiClient): Promise<number> {
  const page = await api.getJson<unknown[]>('/clients?filter[connection_state]=connected&page[limit]=1');
  return page.meta?.count ?? 0;
}

/** A no-op command to `ids` through `node` (fanout: bounded by its own 120 s limit); a failed run is a miss. */
async function probeThrough(node: BenchNode, nodes: BenchNode[], ids: string[], pollMs: number) {
  const run = await fanout(node, nodes, ids, pollMs).catch((err: unknown) =>
    err instanceof Error ? err.message : String(err),
  );
  if (typeof run === 'string') return { sent: ids.length, successful: 0, missed: [run] };
  return { sent: ids.length, successful: run.counts['successful'] ?? 0, missed: run.notSuccessful };
}

/** Connects agents until `total` are connected over the nodes (their even shares), then measures every node. */
export async function runStage(
  state: CurveState,
  stage: number,
  total: number,
  settings: StageSettings,
): Promise<ClusterStage> {
  const { nodes } = state;
  const shares = spread(total, nodes.length);
  const fleets = nodes.map((node, i) => {
    const count = Math.max(0, (shares[i] ?? 0) - (state.started[i] ?? 0));
    state.started[i] = (state.started[i] ?? 0) + count;
    return node.newFleet(count, `s${stage}n${i + 1}-`, settings.workersPerNode);
  });
  state.fleets.push(...fleets);
  const start = performance.now();
  for (const fleet of fleets) fleet.start();
  const connectSeconds = await Promise.all(
    fleets.map(async (fleet, i) => {
      const node = nodes[i] as BenchNode;
      await fleet.waitAllConnected(settings.connectTimeoutS * 1000, (s) =>
        progress(
          `stage ${stage} (${total} in all), ${node.id}: ${s.connected}/${s.total} new agents connected, ` +
            `${s.backingOff} backing off${Object.keys(s.failures).length ? `; failed attempts ${JSON.stringify(s.failures)}` : ''}`,
        ),
      );
      return (performance.now() - start) / 1000;
    }),
  );
  const allConnected = (performance.now() - start) / 1000;
  const counted = await waitCounted(nodes, total, settings.countedTimeoutMs);
  const countedSeconds = counted ? (performance.now() - start) / 1000 : undefined;
  progress(
    `${total} agents connected in ${allConnected.toFixed(1)} s` +
      (countedSeconds === undefined ? '' : `, counted by every node after ${countedSeconds.toFixed(1)} s`) +
      `; settling ${settings.settleSeconds} s`,
  );

  const rss = await settledRss(
    nodes.map((node) => node.svcd),
    settings.settleSeconds,
  );
  const held = heldByUrl(state.fleets);
  const measures: RequestMeasure[] = [];
  for (const [i, node] of nodes.entries())
    measures.push(await measureRequests(node.api, state.scrapers[i] as ApiClient, settings.requests));
  const listed = await Promise.all(nodes.map((node) => listedConnected(node.api)));
  const ids = sampleIds(state.fleets, settings.probeClients);
  const probes: (CommandProbe | undefined)[] = [];
  for (const node of nodes)
    probes.push(ids.length > 0 ? await probeThrough(node, nodes, ids, settings.pollMs) : undefined);
  const presenceKeys = await presentClients(state.natsUrl).catch((err: unknown) => String(err));

  const out: NodeStage[] = nodes.map((node, i) => {
    const agents = held[node.svcd.agentUrl] ?? 0;
    const rssKiB = rss[i] ?? 0;
    return {
      node: node.id,
      agents,
      listed: total,
      rssKiB,
      rssPerAgentKiB: (rssKiB - (state.rssBeforeKiB[i] ?? 0)) / Math.max(1, agents),
      connectSeconds: connectSeconds[i] ?? 0,
      ...(measures[i] as RequestMeasure),
      listedConnected: listed[i] ?? 0,
      probe: probes[i],
    };
  });
  for (const n of out)
    progress(
      `${n.node} at ${total}: holds ${n.agents}, ${n.rssPerAgentKiB.toFixed(1)} KiB/agent, /clients p99 ` +
        `${n.clientsMs.p99.toFixed(1)} ms, /status p99 ${n.statusMs.p99.toFixed(1)} ms, counts ` +
        `${n.clientsConnected} and lists ${n.listedConnected} connected` +
        (n.probe ? `, command reached ${n.probe.successful}/${n.probe.sent}` : ''),
    );
  progress(`client keys in NATS presence: ${presenceKeys} (agents ${total})`);
  return { total, connectSeconds: allConnected, countedSeconds, nodes: out, presenceKeys };
}

/** What a stage missed: lines saying plainly which node counts, lists or reaches fewer clients than connected. */
export function stageMisses(stage: ClusterStage): string[] {
  const out: string[] = [];
  const { total } = stage;
  for (const n of stage.nodes) {
    if (n.clientsConnected !== total)
      out.push(`${n.node} counts ${n.clientsConnected} of ${total} connected agents (/status)`);
    if (n.listedConnected !== total)
      out.push(`${n.node} lists ${n.listedConnected} of ${total} connected agents (/clients)`);
    if (n.probe && n.probe.successful !== n.probe.sent)
      out.push(
        `a command through ${n.node} reached ${n.probe.successful} of ${n.probe.sent} sampled agents` +
          (n.probe.missed.length ? ` (${n.probe.missed.slice(0, 3).join('; ')})` : ''),
      );
  }
  if (stage.presenceKeys !== total)
    out.push(`NATS presence holds ${stage.presenceKeys} client keys for ${total} connected agents`);
  return out;
}
