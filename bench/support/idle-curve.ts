/**
 * The idle bench's curve (issue 30): one svcd filled in stages (e.g. 5,000, 10,000, 15,000 agents) and finally up
 * to its descriptor high-water mark (the open-file limit less svcd's reserve). At each stage the measurements of
 * idle-measures.ts (RSS per agent, GET /clients?page[limit]=50 and GET /status p99, svcd's event-loop delay) and
 * the time the stage took to connect. At the maximum: that the next agent is refused with 503 and Retry-After,
 * then the graceful stop time with every agent connected.
 */
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient, type StatusData } from './api-client.js';
import { onCleanUp } from './bench-runner.js';
import {
  CURVE_TARGETS,
  measureRequests,
  settledRss,
  stageCells,
  stageChecks,
  STAGE_HEADERS,
  type DescriptorStatus,
  type StageFigures,
} from './idle-measures.js';
import type { LoadSetup } from './load-setup.js';
import { cpuWhile } from './proc-stats.js';
import { progress, table, type Check } from './report.js';
import { CLIENT_AUTH } from './svcd-process.js';
import { AGENT_UPGRADE_REQUEST } from '../../test-support/raw-http.js';
import { SimulatorFleet } from './simulator-fleet.js';

export { CURVE_TARGETS };

export interface CurveStage extends StageFigures {
  connectSeconds: number;
}

export interface CurveResult {
  stages: CurveStage[];
  limit: number;
  highWater: number;
  /** The answer to one more agent's upgrade at the maximum. */
  nextAgent: { status: number; retryAfter: string | undefined };
  stopSeconds: number;
  /** svcd's own CPU time during the stop (the rest of the wall time it waited for a core or for I/O). */
  stopCpuSeconds: number | undefined;
  stopTimeline: StopTimeline;
  checks: Check[];
  report: string;
}

export interface CurveOptions {
  setup: LoadSetup;
  /** Agent counts before the maximum, ascending. */
  steps: number[];
  workers: number;
  connectConcurrency: number;
  connectTimeoutS: number;
  requests: number;
  settleSeconds: number;
  rssBeforeKiB: number;
  stopGraceMs: number;
}

/**
 * Where the stop's wall time went, seen from outside svcd: seconds after the SIGTERM when the simulated agents
 * lost their first and their last link (the goodbyes come after the database is closed, the rest at exit), and
 * the CPU the simulator processes used meanwhile on the same two cores.
 */
export interface StopTimeline {
  firstLinkLostS: number | undefined;
  lastLinkLostS: number | undefined;
  simulatorsCpuS: number;
}

/** Descriptors left below the high-water mark by the stages; the overflow fleet takes them. */
const OVERFLOW_MARGIN = 20;

/** One raw WebSocket upgrade to the agent port, as an agent sends it; the status line and Retry-After. */
function upgradeOnce(port: number): Promise<{ status: number; retryAfter: string | undefined }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => (received += chunk));
    socket.once('error', reject);
    socket.once('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0);
      resolve({ status, retryAfter: /\r\nretry-after: *([^\r]*)/i.exec(received)?.[1] });
    });
    socket.write(AGENT_UPGRADE_REQUEST);
  });
}

/** Connects `count` more agents (a fleet of their own) and waits until svcd lists `total` connected. */
async function addAgents(options: CurveOptions, stage: number, count: number, total: number) {
  const { setup } = options;
  const status = await setup.api.getJson<StatusData>('/status');
  const fleet = new SimulatorFleet({
    url: setup.svcd.agentUrl,
    authId: CLIENT_AUTH.id,
    password: CLIENT_AUTH.password,
    fingerprint: status.data.fingerprint,
    clients: count,
    workers: Math.max(1, Math.min(options.workers, Math.ceil(count / 500))),
    startConcurrency: options.connectConcurrency,
    idPrefix: `stage${stage}-`,
  });
  onCleanUp(() => fleet.stop());
  const start = performance.now();
  fleet.start();
  await fleet.waitAllConnected(options.connectTimeoutS * 1000, (s) =>
    progress(
      `stage ${stage}: ${s.connected}/${count} connected (${total} in all), ${s.backingOff} backing off`,
    ),
  );
  for (let deadline = Date.now() + 60_000; ; await sleep(250)) {
    const listed = (await setup.api.getJson<StatusData>('/status')).data.clients_connected;
    if (listed === total) break;
    if (Date.now() > deadline) throw new Error(`svcd lists ${listed} connected, expected ${total}`);
  }
  return { fleet, seconds: (performance.now() - start) / 1000 };
}

/**
 * Connects agents until svcd refuses them: a fleet of more than are left below the high-water mark, until one
 * of them is refused with 503. Resolves with how many of them connected.
 */
async function fillToHighWater(
  options: CurveOptions,
  stage: number,
  highWater: number,
): Promise<{ fleet: SimulatorFleet; connected: number }> {
  const { setup } = options;
  const status = (await setup.api.getJson<DescriptorStatus>('/status')).data;
  const left = highWater - (status.descriptors_used ?? highWater);
  const fleet = new SimulatorFleet({
    url: setup.svcd.agentUrl,
    authId: CLIENT_AUTH.id,
    password: CLIENT_AUTH.password,
    fingerprint: status.fingerprint,
    clients: Math.max(0, left) + OVERFLOW_MARGIN,
    workers: 1,
    startConcurrency: 4,
    idPrefix: `stage${stage}-`,
  });
  onCleanUp(() => fleet.stop());
  fleet.start();
  for (let deadline = Date.now() + 120_000; ; await sleep(250)) {
    fleet.check();
    const s = fleet.stats();
    if ((s.failures['busy (HTTP 503)'] ?? 0) > 0 && s.handshaking === 0) {
      progress(
        `filled to the high-water mark: ${s.connected} more agents connected, the rest refused with 503`,
      );
      return { fleet, connected: s.connected };
    }
    if (Date.now() > deadline) throw new Error(`no agent was refused with 503: ${JSON.stringify(s)}`);
  }
}

async function measureStage(
  options: CurveOptions,
  scraper: ApiClient,
  agents: number,
  connectSeconds: number,
) {
  const { setup } = options;
  const [rssKiB = 0] = await settledRss([setup.svcd], options.settleSeconds);
  const measured = await measureRequests(setup.api, scraper, options.requests);
  const stage: CurveStage = {
    agents,
    listed: agents,
    connectSeconds,
    rssKiB,
    rssPerAgentKiB: (rssKiB - options.rssBeforeKiB) / agents,
    ...measured,
  };
  progress(
    `${agents} agents: ${stage.rssPerAgentKiB.toFixed(1)} KiB/agent, /clients p99 ${stage.clientsMs.p99.toFixed(1)} ms, ` +
      `/status p99 ${stage.statusMs.p99.toFixed(1)} ms, event loop p99 ${stage.eventLoopP99Ms.toFixed(1)} ms`,
  );
  return stage;
}

export async function runIdleCurve(options: CurveOptions): Promise<CurveResult> {
  const { setup } = options;
  const scraper = new ApiClient(setup.svcd.metricsUrl, 1);
  onCleanUp(() => scraper.close());
  const before = (await setup.api.getJson<DescriptorStatus>('/status')).data;
  const limit = before.descriptors_limit;
  const highWater = before.descriptors_agent_high_water;
  if (limit === null || highWater === null || before.descriptors_used === null)
    throw new Error('svcd does not report its descriptors: the curve needs Linux');
  // Every agent holds one descriptor: the maximum is the high-water mark less what svcd holds without agents
  // (and a few for the scraper's and the API client's connections); overflow() takes the last few.
  const max = highWater - before.descriptors_used - OVERFLOW_MARGIN;
  progress(
    `open-file limit ${limit}, agents refused from ${highWater} descriptors on: at most ${max} agents`,
  );
  const counts = [...options.steps.filter((n) => n < max), max];

  const stages: CurveStage[] = [];
  const fleets: SimulatorFleet[] = [];
  let total = 0;
  for (const [i, target] of counts.entries()) {
    const added = await addAgents(options, i, target - total, target);
    fleets.push(added.fleet);
    total = target;
    stages.push(await measureStage(options, scraper, total, added.seconds));
  }
  const overflow = await fillToHighWater(options, counts.length, highWater);
  fleets.push(overflow.fleet);
  total += overflow.connected;
  const nextAgent = await upgradeOnce(setup.svcd.agentPort);
  progress(`one more agent: HTTP ${nextAgent.status}, Retry-After ${nextAgent.retryAfter ?? '-'}`);

  await Promise.all(fleets.map((fleet) => fleet.mark()));
  const simulatorsCpuBefore = sum(fleets.map((fleet) => fleet.cpuMs()));
  progress(`SIGTERM to svcd with ${total} agents connected`);
  const sentAt = Date.now();
  const stop = await cpuWhile(setup.svcd.pid, () => setup.svcd.stop(options.stopGraceMs));
  const stopSeconds = stop.wallMs / 1000;
  const stopCpuSeconds = stop.cpuMs === undefined ? undefined : stop.cpuMs / 1000;
  const stopTimeline = await timelineOf(fleets, sentAt, simulatorsCpuBefore);
  const at = (s: number | undefined) => (s === undefined ? '-' : `+${s.toFixed(1)} s`);
  progress(
    `svcd stopped in ${stopSeconds.toFixed(1)} s, ${stopCpuSeconds?.toFixed(1) ?? '?'} s of its own CPU; agents ` +
      `lost their first link at ${at(stopTimeline.firstLinkLostS)}, their last at ` +
      `${at(stopTimeline.lastLinkLostS)}; the simulators used ${stopTimeline.simulatorsCpuS.toFixed(1)} s of CPU`,
  );

  const first = stages[0]!;
  const last = stages[stages.length - 1]!;
  const checks: Check[] = [
    ...stageChecks(first, last),
    {
      target: 'the next agent at the maximum',
      value: `HTTP ${nextAgent.status}, Retry-After ${nextAgent.retryAfter ?? '-'}`,
      limit: '503 with Retry-After',
      pass: nextAgent.status === 503 && nextAgent.retryAfter !== undefined,
    },
    {
      target: `graceful stop with ${total} agents`,
      value: `${stopSeconds.toFixed(1)} s`,
      limit: `<= ${CURVE_TARGETS.maxStopSeconds} s`,
      pass: stopSeconds <= CURVE_TARGETS.maxStopSeconds,
    },
  ];
  const report = table(
    ['agents', 'connect (stage)', ...STAGE_HEADERS],
    stages.map((s) => [String(s.agents), `${s.connectSeconds.toFixed(1)} s`, ...stageCells(s, limit)]),
  );
  return { stages, limit, highWater, nextAgent, stopSeconds, stopCpuSeconds, stopTimeline, checks, report };
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

/** Waits until the simulators report no connected agent (at most 30 s), then reads when their links were lost. */
async function timelineOf(
  fleets: SimulatorFleet[],
  sentAt: number,
  simulatorsCpuBefore: number,
): Promise<StopTimeline> {
  const simulatorsCpuS = (sum(fleets.map((fleet) => fleet.cpuMs())) - simulatorsCpuBefore) / 1000;
  for (let deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(250))
    if (fleets.every((fleet) => fleet.stats().connected === 0)) break;
  const stats = fleets.map((fleet) => fleet.stats());
  const firsts = stats.map((s) => s.firstDropAfterMark).filter((t) => t > 0);
  const lasts = stats.map((s) => s.lastDropAfterMark).filter((t) => t > 0);
  const since = (t: number) => (t - sentAt) / 1000;
  return {
    firstLinkLostS: firsts.length > 0 ? since(Math.min(...firsts)) : undefined,
    lastLinkLostS: lasts.length > 0 ? since(Math.max(...lasts)) : undefined,
    simulatorsCpuS,
  };
}
