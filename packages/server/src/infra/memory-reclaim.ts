import type { MemoryReclaim } from '@svc/platform';

/** A run on fewer clients than this leaves too little garbage to be worth a collection. */
export const RECLAIM_MIN_TARGETS = 500;

/**
 * What gives back the memory of large fan-outs: each client of a run leaves a few KiB of short-lived objects
 * that survive into V8's old generation, tens of MiB at 1,000 clients, hundreds at 10,000, which an svcd that
 * has gone quiet would keep. A full collection pauses svcd for about 50 ms at 1,000 clients (see BENCHMARKS.md),
 * so only runs of `minTargets` or more ask for one.
 */
export function reclaimAfterLargeRuns(
  reclaim: Pick<MemoryReclaim, 'afterLoad'>,
  minTargets = RECLAIM_MIN_TARGETS,
): (targets: number) => void {
  return (targets) => {
    if (targets >= minTargets) reclaim.afterLoad();
  };
}
