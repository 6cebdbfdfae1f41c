import { expect, test } from 'vitest';
import { RECLAIM_QUIET_MS } from '@svc/platform';
import {
  CONNECT_BURST_QUIET_MS,
  reclaimAfterConnectBursts,
  reclaimAfterLargeRuns,
} from '../../src/infra/memory-reclaim.js';

test('only runs on at least the minimum number of clients ask for a reclaim', () => {
  let asked = 0;
  const afterRun = reclaimAfterLargeRuns({ afterLoad: () => (asked += 1) }, 100);
  afterRun(1);
  afterRun(99);
  expect(asked).toBe(0);
  afterRun(100);
  afterRun(5000);
  expect(asked).toBe(2);
});

test('a burst of at least the minimum number of agent connections asks for a reclaim; scattered ones do not', () => {
  let asked = 0;
  let clock = 0;
  const quiets: (number | undefined)[] = [];
  const connected = reclaimAfterConnectBursts(
    {
      afterLoad: (quietMs?: number) => {
        asked += 1;
        quiets.push(quietMs);
      },
    },
    { minConnects: 3, now: () => clock },
  );
  // Three connections, each more than the reclaim's quiet time after the one before: no burst.
  for (let i = 0; i < 3; i++) {
    clock += RECLAIM_QUIET_MS + 1;
    connected();
  }
  expect(asked).toBe(0);
  // Then, after a pause, four within a second of each other: the third and the fourth ask.
  clock += RECLAIM_QUIET_MS;
  for (let i = 0; i < 4; i++) {
    clock += 250;
    connected();
  }
  expect(asked).toBe(2);
  // A burst's reclaim waits longer than a run's: a storm of reconnects has lulls of a few seconds.
  expect(quiets).toEqual([CONNECT_BURST_QUIET_MS, CONNECT_BURST_QUIET_MS]);
  expect(CONNECT_BURST_QUIET_MS).toBeGreaterThan(RECLAIM_QUIET_MS);
});
