/**
 * The steady-state measures of the cluster bench: the `/clients` page through each node, a command's round trip
 * through the node holding the client and through another one, and a fan-out to clients of every node.
 */
import { cpuByGroup, cpuByGroupSince } from './proc-stats.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient } from './api-client.js';
import type { BenchNode } from './cluster-setup.js';
import { sequentialLatencies, summarize, type LatencySummary } from './latency.js';
import { progress } from './report.js';

export const LIST_PATH = '/clients?page[limit]=50';
const WARMUP_REQUESTS = 30;
const JOB_TIMEOUT_MS = 120_000;
/** Ids per page when listing every client of a node. */
const PAGE = 500;

export interface NodeListing {
  node: string;
  latency: LatencySummary;
}

/** GET /clients?page[limit]=50 through each node: a warm-up, then `requests` one after another. */
export async function listingThroughEachNode(
  nodes: BenchNode[],
  total: number,
  requests: number,
): Promise<NodeListing[]> {
  const out: NodeListing[] = [];
  for (const node of nodes) {
    await sequentialLatencies(node.api, LIST_PATH, WARMUP_REQUESTS);
    const latency = summarize(await sequentialLatencies(node.api, LIST_PATH, requests));
    const sample = await node.api.getJson<unknown[]>(LIST_PATH);
    if (sample.meta?.count !== total || sample.data.length !== Math.min(50, total))
      throw new Error(
        `GET ${LIST_PATH} through ${node.id}: count ${String(sample.meta?.count)}, ${sample.data.length} records ` +
          `(expected ${total})`,
      );
    progress(
      `GET ${LIST_PATH} through ${node.id}: p50 ${latency.p50.toFixed(1)} ms, p99 ${latency.p99.toFixed(1)} ms`,
    );
    out.push({ node: node.id, latency });
  }
  return out;
}

/** Every client id listed connected whose id starts with `prefix`, through `api` (sorted, PAGE per request). */
export async function connectedIdsOf(
  api: ApiClient,
  prefix: string,
): Promise<{ id: string; connected_at: string | null }[]> {
  const out: { id: string; connected_at: string | null }[] = [];
  for (let offset = 0; offset < 1_000_000; offset += PAGE) {
    const page = await api.getJson<{ id: string; connected_at: string | null }[]>(
      `/clients?filter[id]=${encodeURIComponent(`${prefix}*`)}&filter[connection_state]=connected` +
        `&fields[clients]=id,connected_at&sort=id&page[limit]=${PAGE}&page[offset]=${offset}`,
    );
    out.push(...page.data);
    if (page.data.length < PAGE) break;
  }
  return out;
}

interface JobAnswer {
  data: { status: string; error?: string };
}

/**
 * One command's round trip through `api`: POST /clients/{id}/commands (the simulated agent's no-op), then GET of
 * the job every `pollMs` until it is no longer running. Returns the time from sending the POST to that answer,
 * or why the job did not succeed.
 */
async function roundTrip(api: ApiClient, clientId: string, pollMs: number): Promise<number | string> {
  const started = performance.now();
  const post = await api.post(`/clients/${clientId}/commands`, { command: 'noop' });
  if (post.status !== 200)
    throw new Error(`POST /clients/${clientId}/commands: HTTP ${post.status} ${post.body.slice(0, 300)}`);
  const jid = (JSON.parse(post.body) as { data: { jid: string } }).data.jid;
  for (;;) {
    const answer = await api.get(`/clients/${clientId}/commands/${jid}`);
    if (answer.status !== 200)
      throw new Error(
        `GET /clients/${clientId}/commands/${jid}: HTTP ${answer.status} ${answer.body.slice(0, 300)}`,
      );
    const job = (JSON.parse(answer.body) as JobAnswer).data;
    if (job.status !== 'running') {
      if (job.status !== 'successful') return `${job.status}: ${job.error ?? ''}`;
      return performance.now() - started;
    }
    if (performance.now() - started > JOB_TIMEOUT_MS)
      throw new Error(`job ${jid} on ${clientId} still running after ${JOB_TIMEOUT_MS} ms`);
    await sleep(pollMs);
  }
}

export interface Routing {
  clientId: string;
  owner: string;
  other: string;
  viaOwner: LatencySummary;
  viaOther: LatencySummary;
  /** Round trips (warm-ups included) whose job did not succeed: they are left out of the times. */
  failed: { via: string; error: string }[];
  /** Median through the other node / median through the owner. */
  ratio: number;
}

/**
 * Round trips for one client of `owner`, alternating between `owner` and `other` (so that load drifts hit both
 * alike): `warmup` each not counted, then `runs` each.
 */
export async function routingOverhead(
  owner: BenchNode,
  other: BenchNode,
  runs: number,
  warmup: number,
  pollMs: number,
): Promise<Routing> {
  const [first] = await connectedIdsOf(owner.api, owner.agentPrefix);
  if (!first) throw new Error(`${owner.id} lists no connected client ${owner.agentPrefix}*`);
  const clientId = first.id;
  const failed: { via: string; error: string }[] = [];
  const viaOwner: number[] = [];
  const viaOther: number[] = [];
  const time = async (node: BenchNode, into: number[] | undefined) => {
    const outcome = await roundTrip(node.api, clientId, pollMs).catch((err: unknown) => String(err));
    if (typeof outcome === 'string') failed.push({ via: node.id, error: outcome });
    else into?.push(outcome);
  };
  for (let i = 0; i < warmup; i++) {
    await time(owner, undefined);
    await time(other, undefined);
  }
  for (let i = 0; i < runs; i++) {
    await time(owner, viaOwner);
    await time(other, viaOther);
  }
  const [a, b] = [summarize(viaOwner), summarize(viaOther)];
  return {
    clientId,
    owner: owner.id,
    other: other.id,
    viaOwner: a,
    viaOther: b,
    ratio: b.p50 / a.p50,
    failed,
  };
}

/** `meta.jobs` of GET /commands/{jid}: children per status (running, queued, successful, failed, …). */
type StatusCounts = Record<string, number>;

export interface FanoutRun {
  /** From sending the POST to the GET that counted every child finished. */
  ms: number;
  postMs: number;
  polls: number;
  /** svcd CPU time of every node during the run. */
  cpuMs: Record<string, number>;
  /** CPU time of the machine's processes during the run, by group (svcd nodes, simulators, postgres, nats, bench). */
  machineCpuMs: Record<string, number>;
  /** Children per status at the end; every one should be successful. */
  counts: StatusCounts;
  /** A few children that did not succeed: `client_id: status: error`. */
  notSuccessful: string[];
}

const finishedOf = (counts: StatusCounts) =>
  Object.entries(counts).reduce(
    (n, [status, count]) => (['running', 'queued'].includes(status) ? n : n + count),
    0,
  );

/** Up to 5 children of the run that did not succeed, with their errors. */
async function notSuccessful(api: ApiClient, jid: string): Promise<string[]> {
  const out: string[] = [];
  for (const status of ['failed', 'unknown', 'expired', 'cancelled', 'skipped']) {
    const page = await api.getJson<{ client_id: string; error?: string }[]>(
      `/commands/${jid}/jobs?filter[status]=${status}&page[limit]=5`,
    );
    out.push(...page.data.map((job) => `${job.client_id}: ${status}: ${job.error ?? ''}`));
  }
  return out.slice(0, 5);
}

/** Client ids for a fan-out: `count` of them, taken in turn from each node's connected clients. */
export async function fanoutTargets(nodes: BenchNode[], count: number): Promise<string[]> {
  const perNode = await Promise.all(
    nodes.map(async (node) => (await connectedIdsOf(node.api, node.agentPrefix)).map((c) => c.id)),
  );
  const ids: string[] = [];
  for (let i = 0; ids.length < count && perNode.some((list) => i < list.length); i++)
    for (const list of perNode) if (i < list.length && ids.length < count) ids.push(list[i] as string);
  return ids;
}

/** The groups a measure's machine CPU is told by: each node, the simulators, the database, the broker, the bench. */
export function machineGroups(nodes: BenchNode[]): (pid: number, commandLine: string) => string | undefined {
  const nodeOf = new Map(nodes.map((node) => [node.svcd.pid, node.id]));
  return (pid, commandLine) => {
    const node = nodeOf.get(pid);
    if (node) return node;
    if (pid === process.pid) return 'bench';
    if (commandLine.includes('simulator-worker')) return 'simulators';
    if (commandLine.startsWith('postgres')) return 'postgres';
    if (commandLine.includes('nats-server')) return 'nats-server';
    return undefined;
  };
}

/**
 * POST /commands {command: "noop", client_ids, execute_concurrently} through `via`, then GET /commands/{jid}
 * every `pollMs` until every child is finished; those that did not succeed are counted and sampled.
 */
export async function fanout(
  via: BenchNode,
  nodes: BenchNode[],
  ids: string[],
  pollMs: number,
): Promise<FanoutRun> {
  const cpuBefore = nodes.map((node) => node.svcd.cpuMs());
  const groupOf = machineGroups(nodes);
  const machineBefore = cpuByGroup(groupOf);
  const started = performance.now();
  const post = await via.api.post('/commands', {
    command: 'noop',
    client_ids: ids,
    execute_concurrently: true,
    abort_on_error: false,
  });
  if (post.status !== 200) throw new Error(`POST /commands: HTTP ${post.status} ${post.body.slice(0, 300)}`);
  const jid = (JSON.parse(post.body) as { data: { jid: string } }).data.jid;
  for (let polls = 1; ; polls++) {
    const answer = await via.api.get(`/commands/${jid}?fields[commands]=jid`);
    if (answer.status !== 200)
      throw new Error(`GET /commands/${jid}: HTTP ${answer.status} ${answer.body.slice(0, 300)}`);
    const counts = (JSON.parse(answer.body) as { meta: { jobs: StatusCounts } }).meta.jobs;
    if (finishedOf(counts) === ids.length) {
      const ms = performance.now() - started;
      const cpuMs = Object.fromEntries(
        nodes.map((node, i) => [node.id, node.svcd.cpuMs() - (cpuBefore[i] ?? 0)]),
      );
      const machineCpuMs = cpuByGroupSince(machineBefore, groupOf);
      const failures = counts['successful'] === ids.length ? [] : await notSuccessful(via.api, jid);
      return { ms, postMs: post.ms, polls, cpuMs, machineCpuMs, counts, notSuccessful: failures };
    }
    if (performance.now() - started > JOB_TIMEOUT_MS)
      throw new Error(`run ${jid} not finished after ${JOB_TIMEOUT_MS} ms: ${JSON.stringify(counts)}`);
    await sleep(pollMs);
  }
}
