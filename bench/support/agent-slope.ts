/**
 * svcd's RSS slope per connected agent between a small and a larger fleet (20 → 120 by default), for real agent
 * processes or for simulated agents measured the same way: a fresh svcd, `from` agents connected, RSS settled and
 * sampled, the rest connected, settled and sampled again; slope = RSS difference / added agents. The settle time
 * must cover V8's memory reducer (it shrinks the heap some seconds after a burst of allocations ends), else the
 * garbage of the handshakes is counted as per-agent memory.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient, type StatusData } from './api-client.js';
import { freePort, HOST } from './child-processes.js';
import { collectGarbage, heapUsedBytes } from './inspector-gc.js';
import { waitListed } from './load-setup.js';
import { sequentialLatencies, summarize } from './latency.js';
import { RealAgentFleet } from './real-agent-fleet.js';
import { processRssKiB } from './proc-stats.js';
import { progress } from './report.js';
import { SimulatorFleet } from './simulator-fleet.js';
import { API_USER, CLIENT_AUTH, SvcdProcess } from './svcd-process.js';

/** Wait after the forced collections before sampling, so that V8 has handed freed pages back. */
const GC_SETTLE_MS = 2_000;

export type AgentKind = 'real' | 'simulated';

export interface SlopeOptions {
  kind: AgentKind;
  from: number;
  to: number;
  /** Seconds between the last agent connecting and the first counted RSS sample. */
  settleSeconds: number;
  /** One-second RSS samples whose median is the value. */
  samples: number;
  /** Agents (real) or first attempts (simulated) connecting at once. */
  connectConcurrency: number;
  svcdNodeArgs: string[];
  /**
   * Simulated agents connected and disconnected before the first measurement, so that the JIT has compiled the
   * connect path (as the API paths are warmed) and its code is not counted as per-agent memory; 0 = none.
   */
  warmupAgents: number;
}

/** A size (KiB) at `from` and at `to` agents (RSS: median of the samples) and the slope between them. */
export interface SlopeFigures {
  fromKiB: number;
  toKiB: number;
  perAgentKiB: number;
}

export interface SlopeResult {
  kind: AgentKind;
  from: number;
  to: number;
  /** RSS as it is after settling (no forced GC). */
  settled: SlopeFigures;
  /** RSS right after full garbage collections: what the agents keep alive, without garbage or its timing. */
  afterGc: SlopeFigures;
  /** The live JS heap after those collections (V8's used size): its slope has none of RSS's page-level noise. */
  liveHeap: SlopeFigures;
  /** Seconds to connect the added agents. */
  connectSeconds: number;
  samplesKiB: Record<'from' | 'to', { settled: number[]; afterGc: number[]; liveHeapKiB: number }>;
  /** Real agents only: their summed RSS at `to`. */
  agentsRssKiB?: number;
}

/** `count` one-second RSS samples. */
async function rssSamples(svcd: SvcdProcess, count: number): Promise<number[]> {
  const values: number[] = [];
  for (let i = 0; i < count; i++) {
    values.push(svcd.rssKiB());
    await sleep(1000);
  }
  return values;
}

/** RSS samples after `settleSeconds` of waiting, then again after full garbage collections. */
async function measurePoint(
  svcd: SvcdProcess,
  inspectPort: number,
  options: SlopeOptions,
): Promise<{ settled: number[]; afterGc: number[]; liveHeapKiB: number }> {
  await sleep(options.settleSeconds * 1000);
  const settled = await rssSamples(svcd, options.samples);
  // Twice: the first one may leave objects that only weak references or finalizers kept.
  await collectGarbage(HOST, inspectPort);
  await collectGarbage(HOST, inspectPort);
  const liveHeapKiB = (await heapUsedBytes(HOST, inspectPort)) / 1024;
  await sleep(GC_SETTLE_MS);
  return { settled, afterGc: await rssSamples(svcd, options.samples), liveHeapKiB };
}

/** Runs one slope measurement on its own svcd; everything it started is stopped before it returns. */
export async function measureSlope(options: SlopeOptions): Promise<SlopeResult> {
  const { kind, from, to } = options;
  const workDir = await mkdtemp(join(tmpdir(), `svc-slope-${kind}-`));
  const inspectPort = await freePort();
  const svcd = new SvcdProcess({
    workDir,
    maxHandshakes: 0,
    nodeArgs: [...options.svcdNodeArgs, `--inspect=${HOST}:${inspectPort}`],
  });
  const stops: (() => Promise<void>)[] = [];
  try {
    await svcd.start();
    const client = new ApiClient(svcd.apiBase, 1);
    stops.push(() => Promise.resolve(client.close()));
    await client.login(API_USER.name, API_USER.password);
    const fingerprint = (await client.getJson<StatusData>('/status')).data.fingerprint;
    // Warm the API paths up so that their code is in the baseline.
    await sequentialLatencies(client, '/clients?page[limit]=50', 30);
    await sequentialLatencies(client, '/status', 30);
    const link = { url: svcd.agentUrl, authId: CLIENT_AUTH.id, password: CLIENT_AUTH.password, fingerprint };
    if (options.warmupAgents > 0) {
      const warmup = new SimulatorFleet({
        ...link,
        clients: options.warmupAgents,
        workers: 1,
        startConcurrency: options.connectConcurrency,
        idPrefix: 'warmup-',
      });
      warmup.start();
      try {
        await warmup.waitAllConnected(600_000, () => undefined);
      } finally {
        await warmup.stop();
      }
      await waitListed(client, 0);
    }
    const real = new RealAgentFleet({
      ...link,
      workDir,
      idPrefix: 'real-',
      startConcurrency: options.connectConcurrency,
    });
    stops.push(() => real.stop());
    let connected = 0;
    const grow = async (total: number) => {
      if (kind === 'real') await real.growTo(total);
      else {
        const fleet = new SimulatorFleet({
          ...link,
          clients: total - connected,
          workers: 1,
          startConcurrency: options.connectConcurrency,
          idPrefix: `slope-${connected}-`,
        });
        stops.push(() => fleet.stop());
        fleet.start();
        await fleet.waitAllConnected(600_000, () => undefined);
      }
      connected = total;
      await waitListed(client, total);
    };

    await grow(from);
    progress(`${from} ${kind} agents connected; settling ${options.settleSeconds} s`);
    const fromSamples = await measurePoint(svcd, inspectPort, options);
    const connectStart = performance.now();
    await grow(to);
    const connectSeconds = (performance.now() - connectStart) / 1000;
    progress(
      `${to} ${kind} agents connected in ${connectSeconds.toFixed(1)} s; settling ${options.settleSeconds} s`,
    );
    const toSamples = await measurePoint(svcd, inspectPort, options);
    if (kind === 'real' && real.exited > 0) throw new Error(`${real.exited} real agents exited while held`);
    const figures = (which: 'settled' | 'afterGc'): SlopeFigures => {
      const fromKiB = summarize(fromSamples[which]).p50;
      const toKiB = summarize(toSamples[which]).p50;
      return { fromKiB, toKiB, perAgentKiB: (toKiB - fromKiB) / (to - from) };
    };
    const result: SlopeResult = {
      kind,
      from,
      to,
      settled: figures('settled'),
      afterGc: figures('afterGc'),
      liveHeap: {
        fromKiB: fromSamples.liveHeapKiB,
        toKiB: toSamples.liveHeapKiB,
        perAgentKiB: (toSamples.liveHeapKiB - fromSamples.liveHeapKiB) / (to - from),
      },
      connectSeconds,
      samplesKiB: { from: fromSamples, to: toSamples },
      ...(kind === 'real'
        ? { agentsRssKiB: real.agents.reduce((sum, a) => sum + (processRssKiB(a.proc.pid) ?? 0), 0) }
        : {}),
    };
    const { settled, afterGc } = result;
    progress(
      `${kind}: svcd RSS ${settled.fromKiB} KiB at ${from}, ${settled.toKiB} KiB at ${to}: ` +
        `${settled.perAgentKiB.toFixed(1)} KiB per agent; after a full GC ${afterGc.fromKiB} and ` +
        `${afterGc.toKiB} KiB: ${afterGc.perAgentKiB.toFixed(1)} KiB per agent; ` +
        `live heap ${result.liveHeap.perAgentKiB.toFixed(1)} KiB per agent`,
    );
    return result;
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await svcd.stop();
    await rm(workDir, { recursive: true, force: true });
  }
}
