import { PerformanceObserver, constants, type PerformanceEntry } from 'node:perf_hooks';
import { expect, test } from 'vitest';
import { RelayGarbage } from '../src/relay-garbage.js';

const MIB = 1024 * 1024;
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** Resolves at this process's next young-generation collection (scavenge). */
function nextMinorGc(): Promise<void> {
  return new Promise((resolve) => {
    const observer = new PerformanceObserver((list) => {
      const minor = list.getEntries().some((entry) => {
        const { detail } = entry as PerformanceEntry & { detail?: { kind?: number } };
        return detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR;
      });
      if (!minor) return;
      observer.disconnect();
      resolve();
    });
    observer.observe({ entryTypes: ['gc'] });
  });
}

test('a young-generation collection runs once `everyBytes` have been relayed, after the current turn', async () => {
  let collected = 0;
  const garbage = new RelayGarbage({ everyBytes: 4 * MIB, collected: () => (collected += 1) });
  garbage.add(3 * MIB);
  await nextTurn();
  expect(collected).toBe(0);
  const scavenged = nextMinorGc();
  garbage.add(MIB);
  expect(collected).toBe(0);
  await nextTurn();
  expect(collected).toBe(1);
  await scavenged;
  // The count starts again after a collection.
  garbage.add(3 * MIB);
  await nextTurn();
  expect(collected).toBe(1);
});

test('many chunks past the limit within one turn cause one collection', async () => {
  let collected = 0;
  const garbage = new RelayGarbage({ everyBytes: MIB, collected: () => (collected += 1) });
  for (let i = 0; i < 64; i++) garbage.add(64 * 1024);
  await nextTurn();
  expect(collected).toBe(1);
});

test('no collection sooner than `minIntervalMs` after the previous one, whatever was relayed', async () => {
  let collected = 0;
  const garbage = new RelayGarbage({
    everyBytes: MIB,
    minIntervalMs: 60_000,
    collected: () => (collected += 1),
  });
  garbage.add(MIB);
  await nextTurn();
  expect(collected).toBe(1);
  garbage.add(8 * MIB);
  await nextTurn();
  expect(collected).toBe(1);
});
