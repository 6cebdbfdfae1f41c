import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** A run on fewer clients than this leaves too little garbage to be worth a collection. */
export const RECLAIM_MIN_TARGETS = 500;
/** Quiet time after the last large run before collecting, so back-to-back runs share one collection. */
export const RECLAIM_QUIET_MS = 3_000;
/** Between the two collections: the first one's concurrent sweeping is done by then. */
const SECOND_COLLECTION_MS = 1_000;

export interface ReclaimOutcome {
  pausesMs: [number, number];
  /** Bytes, before the first collection and after the second. */
  rssBefore: number;
  rssAfter: number;
}

/**
 * Gives back the memory of large fan-outs. Each client of a run leaves a few KiB of short-lived objects that
 * survive into V8's old generation; V8 lets that generation grow and only compacts it at its next major GC,
 * which an svcd that has gone quiet may not run for hours, so the process keeps the pages (tens of MiB at 1,000
 * clients, hundreds at 10,000). Once no large run has ended for RECLAIM_QUIET_MS, two full collections a second
 * apart free them: the first finds the garbage, but leaves the surviving objects scattered over the grown pages;
 * the second moves them together so that V8 can give the emptied pages back. Each is a pause of the process,
 * about 50 ms at 1,000 clients and longer with a larger live heap (see BENCHMARKS.md), once per burst of runs.
 */
export class MemoryReclaim {
  private timer: NodeJS.Timeout | undefined;
  private collect: (() => void) | undefined;

  constructor(
    /** Told each reclaim's pauses and the RSS before and after, for the log. */
    private readonly report: (outcome: ReclaimOutcome) => void = () => {},
    private readonly minTargets = RECLAIM_MIN_TARGETS,
    private readonly quietMs = RECLAIM_QUIET_MS,
  ) {}

  /** A run over `targets` clients has dispatched them all. */
  afterRun(targets: number): void {
    if (targets < this.minTargets) return;
    this.schedule(this.quietMs, () => {
      const rssBefore = process.memoryUsage.rss();
      const first = this.gc();
      this.schedule(SECOND_COLLECTION_MS, () => {
        const second = this.gc();
        this.report({ pausesMs: [first, second], rssBefore, rssAfter: process.memoryUsage.rss() });
      });
    });
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Runs `task` after `ms` unless another run ends first (which starts the wait again). */
  private schedule(ms: number, task: () => void): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      task();
    }, ms);
    this.timer.unref();
  }

  /** One full collection; returns how long it blocked the process, in ms. */
  private gc(): number {
    if (!this.collect) {
      // The documented way to reach V8's collector without starting node with --expose-gc.
      setFlagsFromString('--expose-gc');
      this.collect = runInNewContext('gc') as () => void;
    }
    const start = performance.now();
    this.collect();
    return performance.now() - start;
  }
}
