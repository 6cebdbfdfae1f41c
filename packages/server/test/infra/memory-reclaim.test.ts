import { PerformanceObserver, constants, type PerformanceEntry } from 'node:perf_hooks';
import { expect, test } from 'vitest';
import { MemoryReclaim } from '../../src/infra/memory-reclaim.js';

/** Resolves with the start time of the next major (mark-compact) GC of this process. */
function nextMajorGc(): Promise<number> {
  return new Promise((resolve) => {
    const observer = new PerformanceObserver((list) => {
      const major = list
        .getEntries()
        .find(
          (entry) =>
            (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ===
            constants.NODE_PERFORMANCE_GC_MAJOR,
        );
      if (!major) return;
      observer.disconnect();
      resolve(performance.timeOrigin + major.startTime);
    });
    observer.observe({ entryTypes: ['gc'] });
  });
}

test('a large run is followed by one full collection once runs have been quiet for a while', async () => {
  const reclaim = new MemoryReclaim(100, 50);
  try {
    const gc = nextMajorGc();
    const ranAt = Date.now();
    reclaim.afterRun(99);
    reclaim.afterRun(100);
    expect(await gc).toBeGreaterThanOrEqual(ranAt + 40);
  } finally {
    reclaim.stop();
  }
});
