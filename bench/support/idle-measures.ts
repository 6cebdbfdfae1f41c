/**
 * The measurements of idle agents on one svcd, shared by the one-node curve (idle-curve.ts) and the same curve over
 * several cluster nodes (idle-cluster.bench.ts): settled RSS, GET /clients?page[limit]=50 and GET /status
 * latencies one after another, svcd's event-loop delay while they ran (its Prometheus series, reset by each
 * scrape), its descriptors, and the issue-30 targets checked on a first and a last stage.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient, StatusData } from './api-client.js';
import { sequentialLatencies, summarize, type LatencySummary } from './latency.js';
import type { Check } from './report.js';

export const CURVE_TARGETS = {
  maxRssPerAgentKiB: 32,
  maxClientsP99Ms: 20,
  maxStatusP99Ms: 50,
  maxStopSeconds: 10,
  /** Per-agent cost at the maximum against that at the first stage. */
  maxGrowth: 1.1,
};

export const LIST_PATH = '/clients?page[limit]=50';
const WARMUP_REQUESTS = 30;
/** RSS samples (one per second) whose median is the settled value. */
export const SETTLED_SAMPLES = 5;

export interface DescriptorStatus extends StatusData {
  descriptors_used: number | null;
  descriptors_limit: number | null;
  descriptors_agent_high_water: number | null;
}

/** What one svcd answered while idle agents were connected. */
export interface RequestMeasure {
  clientsMs: LatencySummary;
  statusMs: LatencySummary;
  /** svcd's event-loop delay while the requests ran, ms. */
  eventLoopP99Ms: number;
  eventLoopMaxMs: number;
  descriptorsUsed: number;
  /** GET /status clients_connected after the requests: the connected clients this svcd counts. */
  clientsConnected: number;
}

const median = (values: number[]) => summarize(values).p50;

export function metricValue(body: string, name: string): number {
  const line = body.split('\n').find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`no ${name} in the metrics`);
  return Number(line.slice(name.length + 1));
}

/**
 * One VmRSS sample per second of each process for `seconds` (at least SETTLED_SAMPLES); per process the median of
 * the last SETTLED_SAMPLES, in KiB.
 */
export async function settledRss(processes: { rssKiB(): number }[], seconds: number): Promise<number[]> {
  const samples: number[][] = processes.map(() => []);
  for (let i = 0; i < Math.max(seconds, SETTLED_SAMPLES); i++) {
    for (const [n, p] of processes.entries()) samples[n]?.push(p.rssKiB());
    await sleep(1_000);
  }
  return samples.map((s) => median(s.slice(-SETTLED_SAMPLES)));
}

/**
 * Through `api`: a warm-up, then `requests` GET /clients?page[limit]=50 and as many GET /status one after
 * another; `scraper` (svcd's /metrics) is read before them (which resets the event-loop series) and after.
 */
export async function measureRequests(
  api: ApiClient,
  scraper: ApiClient,
  requests: number,
): Promise<RequestMeasure> {
  await sequentialLatencies(api, LIST_PATH, WARMUP_REQUESTS);
  await sequentialLatencies(api, '/status', WARMUP_REQUESTS);
  await scraper.get(''); // resets svcd's event-loop histogram
  const clientsMs = summarize(await sequentialLatencies(api, LIST_PATH, requests));
  const statusMs = summarize(await sequentialLatencies(api, '/status', requests));
  const metrics = (await scraper.get('')).body;
  const status = (await api.getJson<DescriptorStatus>('/status')).data;
  return {
    clientsMs,
    statusMs,
    eventLoopP99Ms: metricValue(metrics, 'nodejs_eventloop_lag_p99_seconds') * 1000,
    eventLoopMaxMs: metricValue(metrics, 'nodejs_eventloop_lag_max_seconds') * 1000,
    descriptorsUsed: status.descriptors_used ?? 0,
    clientsConnected: status.clients_connected,
  };
}

/** One svcd at one stage: RSS per agent it holds, and the requests' figures. */
export interface StageFigures extends RequestMeasure {
  /** Agents this svcd holds (its RSS grows with them). */
  agents: number;
  /** Clients GET /clients counts (a cluster lists every node's: the page's cost grows with them). */
  listed: number;
  rssKiB: number;
  rssPerAgentKiB: number;
}

/**
 * The issue-30 targets on the last stage, and the growth from the first: RSS per agent, /clients and /status
 * p99, RSS per agent and /clients p99 per listed client at the last stage against the first. `where` names the
 * svcd in a cluster ('' for one svcd).
 */
export function stageChecks(first: StageFigures, last: StageFigures, where = ''): Check[] {
  const at = (s: StageFigures) => `${s.agents}${where ? ` on ${where}` : ''}`;
  const rssGrowth = last.rssPerAgentKiB / first.rssPerAgentKiB;
  const listGrowth = last.clientsMs.p99 / last.listed / (first.clientsMs.p99 / first.listed);
  return [
    {
      target: `svcd RSS per agent at ${at(last)}`,
      value: `${last.rssPerAgentKiB.toFixed(1)} KiB`,
      limit: `<= ${CURVE_TARGETS.maxRssPerAgentKiB} KiB`,
      pass: last.rssPerAgentKiB <= CURVE_TARGETS.maxRssPerAgentKiB,
    },
    {
      target: `GET ${LIST_PATH} p99 at ${last.listed} listed${where ? `, through ${where}` : ''}`,
      value: `${last.clientsMs.p99.toFixed(1)} ms`,
      limit: `<= ${CURVE_TARGETS.maxClientsP99Ms} ms`,
      pass: last.clientsMs.p99 <= CURVE_TARGETS.maxClientsP99Ms,
    },
    {
      target: `GET /status p99 at ${last.listed}${where ? `, through ${where}` : ''}`,
      value: `${last.statusMs.p99.toFixed(1)} ms`,
      limit: `<= ${CURVE_TARGETS.maxStatusP99Ms} ms`,
      pass: last.statusMs.p99 <= CURVE_TARGETS.maxStatusP99Ms,
    },
    {
      target: `RSS per agent at ${at(last)} / at ${first.agents}`,
      value: rssGrowth.toFixed(2),
      limit: `<= ${CURVE_TARGETS.maxGrowth}`,
      pass: rssGrowth <= CURVE_TARGETS.maxGrowth,
    },
    {
      target: `/clients p99 per listed client at ${last.listed} / at ${first.listed}${where ? ` (${where})` : ''}`,
      value: listGrowth.toFixed(2),
      limit: `<= ${CURVE_TARGETS.maxGrowth}`,
      pass: listGrowth <= CURVE_TARGETS.maxGrowth,
    },
  ];
}

/** Column titles of stageCells. */
export const STAGE_HEADERS = [
  'svcd RSS',
  'RSS / agent',
  '/clients p50 / p99',
  '/status p50 / p99',
  'event loop p99 / max',
  'descriptors',
];

/** A stage's figures as table cells (STAGE_HEADERS); `limit` is svcd's open-file limit. */
export function stageCells(s: StageFigures, limit: number | null): string[] {
  const fmt = (l: LatencySummary) => `${l.p50.toFixed(1)} / ${l.p99.toFixed(1)}`;
  return [
    `${(s.rssKiB / 1024).toFixed(1)} MiB`,
    `${s.rssPerAgentKiB.toFixed(1)} KiB`,
    `${fmt(s.clientsMs)} ms`,
    `${fmt(s.statusMs)} ms`,
    `${s.eventLoopP99Ms.toFixed(1)} / ${s.eventLoopMaxMs.toFixed(1)} ms`,
    `${s.descriptorsUsed} / ${limit ?? '?'}`,
  ];
}
