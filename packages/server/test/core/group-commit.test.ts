import { describe, expect, test } from 'vitest';
import { GroupCommit } from '../../src/core/jobs/group-commit.js';

describe('GroupCommit', () => {
  test('writes the first item at once and what arrives meanwhile together, in batches of at most maxBatch', async () => {
    const writes: number[][] = [];
    let release: () => void = () => undefined;
    const commit = new GroupCommit<number, string>(async (items) => {
      writes.push(items);
      if (writes.length === 1) await new Promise<void>((resolve) => (release = resolve));
      return items.map((n) => `stored ${n}`);
    }, 3);
    const results = [1, 2, 3, 4, 5, 6].map((n) => commit.submit(n));
    expect(writes).toEqual([[1]]);
    release();
    expect(await Promise.all(results)).toEqual([1, 2, 3, 4, 5, 6].map((n) => `stored ${n}`));
    expect(writes).toEqual([[1], [2, 3, 4], [5, 6]]);
    expect(await commit.submit(7)).toBe('stored 7');
    expect(writes.at(-1)).toEqual([7]);
  });

  test('a failed write rejects only the items of its batch', async () => {
    let fail = true;
    const commit = new GroupCommit<number, number>(async (items) => {
      await Promise.resolve();
      if (fail) {
        fail = false;
        throw new Error('database gone');
      }
      return items;
    }, 10);
    const first = commit.submit(1);
    const second = commit.submit(2);
    await expect(first).rejects.toThrow('database gone');
    expect(await second).toBe(2);
  });

  test('a batch stops before the item that would take it over maxWeight; a heavier item goes alone', async () => {
    const writes: number[][] = [];
    let release: () => void = () => undefined;
    const commit = new GroupCommit<number, number>(
      async (items) => {
        writes.push(items);
        if (writes.length === 1) await new Promise<void>((resolve) => (release = resolve));
        return items;
      },
      10,
      (n) => n,
      5,
    );
    const results = [1, 2, 3, 9, 1, 1].map((n) => commit.submit(n));
    release();
    await Promise.all(results);
    expect(writes).toEqual([[1], [2, 3], [9], [1, 1]]);
  });
});
