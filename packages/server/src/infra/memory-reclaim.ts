import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** A run on fewer clients than this leaves too little garbage to be worth a collection. */
export const RECLAIM_MIN_TARGETS = 500;
/** Quiet time after the last large run before collecting, so back-to-back runs share one collection. */
export const RECLAIM_QUIET_MS = 3_000;

/**
 * Gives back the memory of large fan-outs. Each client of a run leaves a few KiB of short-lived objects that
 * survive into V8's old generation; V8 lets that generation grow and only compacts it at its next major GC,
 * which an svcd that has gone quiet may not run for hours, so the process keeps the pages (tens of MiB at 1,000
 * clients, hundreds at 10,000). Once no large run has ended for RECLAIM_QUIET_MS, one full collection frees
 * them: a pause of some tens of milliseconds per 100 MiB of heap, once per burst of runs.
 */
export class MemoryReclaim {
  private timer: NodeJS.Timeout | undefined;
  private collect: (() => void) | undefined;

  constructor(
    private readonly minTargets = RECLAIM_MIN_TARGETS,
    private readonly quietMs = RECLAIM_QUIET_MS,
  ) {}

  /** A run over `targets` clients has dispatched them all. */
  afterRun(targets: number): void {
    if (targets < this.minTargets) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.gc();
    }, this.quietMs);
    this.timer.unref();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private gc(): void {
    if (!this.collect) {
      // The documented way to reach V8's collector without starting node with --expose-gc.
      setFlagsFromString('--expose-gc');
      this.collect = runInNewContext('gc') as () => void;
    }
    this.collect();
  }
}
