import { expect, test } from 'vitest';
import { reclaimAfterLargeRuns } from '../../src/infra/memory-reclaim.js';

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
