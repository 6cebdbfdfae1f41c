/** Latency samples of API requests: sequential runs, a steady-rate probe, and percentiles. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient } from './api-client.js';

export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentile of ascending-sorted values. */
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}

export function summarize(values: number[]): LatencySummary {
  const sorted = [...values].sort((a, b) => a - b);
  const total = sorted.reduce((sum, v) => sum + v, 0);
  return {
    count: sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN,
    mean: sorted.length ? total / sorted.length : Number.NaN,
  };
}

/** `count` requests one after another; every one must answer 200. Returns the latencies in ms. */
export async function sequentialLatencies(api: ApiClient, path: string, count: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const answer = await api.get(path);
    if (answer.status !== 200)
      throw new Error(`GET ${path}: HTTP ${answer.status} ${answer.body.slice(0, 300)}`);
    samples.push(answer.ms);
  }
  return samples;
}

export interface ProbeSample {
  /** ms since the probe started. */
  atMs: number;
  ms: number;
  /** HTTP status, or 0 for a network error or a timeout (after REQUEST_TIMEOUT_MS). */
  status: number;
}

/**
 * Sends GET `path` at a steady rate whatever the answers take (open loop, so a slow server cannot hide its slow
 * answers by delaying the next request), with at most `maxInFlight` outstanding; the rest are counted as skipped.
 */
export class RateProbe {
  readonly samples: ProbeSample[] = [];
  skipped = 0;
  private running = false;
  private loop: Promise<void> | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly api: ApiClient,
    private readonly path: string,
    private readonly ratePerSecond: number,
    private readonly maxInFlight = 50,
  ) {}

  start(): void {
    this.running = true;
    const started = performance.now();
    const interval = 1000 / this.ratePerSecond;
    this.loop = (async () => {
      for (let n = 0; this.running; n++) {
        const wait = started + n * interval - performance.now();
        if (wait > 0) await sleep(wait);
        if (!this.running) break;
        if (this.inFlight.size >= this.maxInFlight) {
          this.skipped += 1;
          continue;
        }
        const sentAt = performance.now();
        const atMs = sentAt - started;
        const request = this.api.get(this.path).then(
          (answer) => void this.samples.push({ atMs, ms: answer.ms, status: answer.status }),
          () => void this.samples.push({ atMs, ms: performance.now() - sentAt, status: 0 }),
        );
        this.inFlight.add(request);
        void request.finally(() => this.inFlight.delete(request));
      }
    })();
  }

  /** Stops sending and waits for the answers still outstanding (each bounded by the request timeout). */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    await Promise.all(this.inFlight);
  }
}
