import { expect, test } from 'vitest';
import { BoundedMap } from '../../src/core/bounded-map.js';

test('a full map forgets the entry added longest ago; updating a key does not evict', () => {
  const map = new BoundedMap<string, number>(2);
  map.set('a', 1);
  map.set('b', 2);
  map.set('a', 10);
  expect([map.get('a'), map.get('b')]).toEqual([10, 2]);
  map.set('c', 3);
  expect([map.get('a'), map.get('b'), map.get('c')]).toEqual([undefined, 2, 3]);
  map.delete('b');
  map.set('d', 4);
  expect([map.get('c'), map.get('d')]).toEqual([3, 4]);
});
