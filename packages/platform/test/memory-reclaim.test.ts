import { PerformanceObserver, constants, type PerformanceEntry } from 'node:perf_hooks';
import { expect, test, vi } from 'vitest';
import { MemoryReclaim, type ReclaimOutcome } from '../src/memory-reclaim.js';

/** Resolves with the start times (epoch ms) of this process's next `count` major (mark-compact) GCs. */
function majorGcs(count: number): Promise<number[]> {
  const times: number[] = [];
  return new Promise((resolve) => {
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const { detail } = entry as PerformanceEntry & { detail?: { kind?: number } };
        if (detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)
          times.push(performance.timeOrigin + entry.startTime);
      }
      if (times.length < count) return;
      observer.disconnect();
      resolve(times.slice(0, count));
    });
    observer.observe({ entryTypes: ['gc'] });
  });
}

test('a burst of work is followed, once quiet for a while, by two full collections a second apart', async () => {
  let reported: ReclaimOutcome | undefined;
  const reclaim = new MemoryReclaim((outcome) => (reported = outcome), 50);
  try {
    const gcs = majorGcs(2);
    const ranAt = Date.now();
    reclaim.afterLoad();
    reclaim.afterLoad();
    const [first, second] = await gcs;
    expect(first).toBeGreaterThanOrEqual(ranAt + 40);
    expect(second! - first!).toBeGreaterThanOrEqual(900);
    await vi.waitFor(() => expect(reported).toBeDefined());
    expect(reported!.pausesMs.every((ms) => ms > 0 && ms < 10_000)).toBe(true);
    expect(reported!.rssAfter).toBeGreaterThan(0);
  } finally {
    reclaim.stop();
  }
});
