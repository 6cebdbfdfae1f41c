import { expect, test } from 'vitest';
import { forEachInSlices, mapInSlices } from '../../src/core/slices.js';

test('a long list is worked through in slices, the event loop handed back between them', async () => {
  const seen: string[] = [];
  // Queued before the work starts: it can only run once the work hands the event loop back.
  setImmediate(() => seen.push('other work'));
  await forEachInSlices(
    Array.from({ length: 7 }, (_, i) => i),
    (i) => seen.push(String(i)),
    3,
  );
  expect(seen).toEqual(['0', '1', '2', 'other work', '3', '4', '5', '6']);
});

test('mapInSlices keeps the order and every item', async () => {
  const items = Array.from({ length: 1_234 }, (_, i) => i);
  expect(await mapInSlices(items, (i) => i * 2)).toEqual(items.map((i) => i * 2));
  expect(await mapInSlices([], (i: number) => i)).toEqual([]);
});

test('a slice also ends once it has worked for its budget, however few items it has done', async () => {
  const seen: string[] = [];
  setImmediate(() => seen.push('other work'));
  const busy = (ms: number) => {
    const until = performance.now() + ms;
    while (performance.now() < until);
  };
  // 2 ms an item, 5 ms a slice: the first slice ends after 3 items at most (after fewer when the machine is slow).
  await forEachInSlices(
    Array.from({ length: 8 }, (_, i) => i),
    (i) => {
      busy(2);
      seen.push(String(i));
    },
    500,
    5,
  );
  const other = seen.indexOf('other work');
  expect(other).toBeGreaterThanOrEqual(1);
  expect(other).toBeLessThanOrEqual(3);
  expect(seen.filter((s) => s !== 'other work')).toEqual(['0', '1', '2', '3', '4', '5', '6', '7']);
});
