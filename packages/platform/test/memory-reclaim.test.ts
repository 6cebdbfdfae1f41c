import { PerformanceObserver, constants, type PerformanceEntry } from 'node:perf_hooks';
import { expect, test, vi } from 'vitest';
import { collectGarbage } from '../src/gc.js';
import { MemoryReclaim, type ReclaimOutcome } from '../src/memory-reclaim.js';

interface Span {
  start: number;
  end: number;
}

/** The start times (performance.now() clock) of the major (mark-compact) GCs this process runs from now on. */
function watchMajorGcs(): { starts: number[]; stop: () => void } {
  const starts: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const { detail } = entry as PerformanceEntry & { detail?: { kind?: number } };
      if (detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) starts.push(entry.startTime);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return { starts, stop: () => observer.disconnect() };
}

test('a burst of work is followed, once quiet for a while, by two full collections apart', async () => {
  const QUIET_MS = 50;
  const SECOND_MS = 300;
  // The reclaim's own collections, each with the span it blocked; other GCs of this process are not looked at.
  const collections: Span[] = [];
  let reported: ReclaimOutcome | undefined;
  const gcs = watchMajorGcs();
  const reclaim = new MemoryReclaim((outcome) => (reported = outcome), {
    quietMs: QUIET_MS,
    secondCollectionMs: SECOND_MS,
    collect: (type) => {
      const start = performance.now();
      const pause = collectGarbage(type);
      collections.push({ start, end: performance.now() });
      return pause;
    },
  });
  try {
    const burstAt = performance.now();
    reclaim.afterLoad();
    reclaim.afterLoad();
    await vi.waitFor(() => expect(reported).toBeDefined(), { timeout: 10_000 });
    const [first, second] = collections;
    expect(collections).toHaveLength(2);
    expect(first!.start - burstAt).toBeGreaterThanOrEqual(QUIET_MS - 1);
    expect(second!.start - first!.start).toBeGreaterThanOrEqual(SECOND_MS - 1);
    // Each of its calls ran a real full collection: V8 reports a major GC that started while the call blocked.
    await vi.waitFor(() => {
      for (const { start, end } of collections)
        expect(gcs.starts.some((at) => at >= start && at <= end)).toBe(true);
    });
    expect(reported!.pausesMs.every((ms) => ms > 0)).toBe(true);
    expect(reported!.rssAfter).toBeGreaterThan(0);
  } finally {
    reclaim.stop();
    gcs.stop();
  }
});

test('each new burst within the quiet time starts the wait again; stop() cancels the reclaim', () => {
  vi.useFakeTimers();
  const collected: string[] = [];
  // Fake timers advance the event-loop clock as busy time: the reclaim is told never to wait for a quieter loop.
  const reclaim = new MemoryReclaim(() => {}, {
    quietMs: 100,
    collect: (type) => (collected.push(type), 0),
    busyUtilization: 1,
  });
  try {
    for (let i = 0; i < 4; i += 1) {
      reclaim.afterLoad();
      vi.advanceTimersByTime(99);
    }
    expect(collected).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(collected).toEqual(['major']);
    reclaim.afterLoad();
    reclaim.stop();
    vi.advanceTimersByTime(10_000);
    expect(collected).toEqual(['major']);
  } finally {
    reclaim.stop();
    vi.useRealTimers();
  }
});

test('collecting says the first collection has run and the second is still to come', () => {
  vi.useFakeTimers();
  const collected: string[] = [];
  const reclaim = new MemoryReclaim(() => {}, {
    quietMs: 100,
    secondCollectionMs: 300,
    collect: (type) => (collected.push(type), 0),
    busyUtilization: 1,
  });
  try {
    reclaim.afterLoad();
    expect(reclaim.collecting).toBe(false);
    vi.advanceTimersByTime(100);
    expect(collected).toEqual(['major']);
    expect(reclaim.collecting).toBe(true);
    vi.advanceTimersByTime(300);
    expect(collected).toEqual(['major', 'major']);
    expect(reclaim.collecting).toBe(false);
    // A burst between the collections starts the reclaim over: no longer collecting, the wait begins again.
    reclaim.afterLoad();
    vi.advanceTimersByTime(100);
    expect(reclaim.collecting).toBe(true);
    reclaim.afterLoad();
    expect(reclaim.collecting).toBe(false);
    reclaim.stop();
    vi.advanceTimersByTime(10_000);
    expect(collected).toEqual(['major', 'major', 'major']);
  } finally {
    reclaim.stop();
    vi.useRealTimers();
  }
});

test('a busy event loop postpones the collection until it is quieter, at most maxPostponeMs', async () => {
  const QUIET_MS = 50;
  const collected: number[] = [];
  const collect = () => {
    collected.push(performance.now());
    return 0;
  };
  /** Keeps the event loop about 80 % busy (40 ms blocked out of every 50) until `ms` from now. */
  const busyFor = (ms: number): Promise<number> =>
    new Promise((resolve) => {
      const end = performance.now() + ms;
      const spin = () => {
        const blockUntil = Math.min(end, performance.now() + 40);
        while (performance.now() < blockUntil);
        if (performance.now() >= end) resolve(performance.now());
        else setTimeout(spin, 10);
      };
      spin();
    });
  const waiting = new MemoryReclaim(() => undefined, {
    quietMs: QUIET_MS,
    secondCollectionMs: QUIET_MS,
    collect,
  });
  const cappedAt: number[] = [];
  const capped = new MemoryReclaim(() => undefined, {
    quietMs: QUIET_MS,
    secondCollectionMs: QUIET_MS,
    collect: () => (cappedAt.push(performance.now()), 0),
    maxPostponeMs: 100,
  });
  try {
    const start = performance.now();
    waiting.afterLoad();
    capped.afterLoad();
    const idleFrom = await busyFor(600);
    await vi.waitFor(() => expect(collected).toHaveLength(2), { timeout: 5_000 });
    // Nothing collected while the loop was busy; the first collection came once a wait saw it quiet.
    expect(collected[0]!).toBeGreaterThanOrEqual(idleFrom);
    // With maxPostponeMs 100 the collection ran during the busy time after all.
    expect(cappedAt[0]! - start).toBeLessThan(600);
  } finally {
    waiting.stop();
    capped.stop();
  }
});
