import { setImmediate as turn } from 'node:timers/promises';
import { describe, expect, test } from 'vitest';
import { GroupCommit } from '../../src/core/jobs/group-commit.js';

describe('GroupCommit', () => {
  test('writes what arrives within one turn together at its end, and what arrives meanwhile in the next batches', async () => {
    const writes: number[][] = [];
    let release: () => void = () => undefined;
    const commit = new GroupCommit<number, string>(async (items) => {
      writes.push(items);
      if (writes.length === 1) await new Promise<void>((resolve) => (release = resolve));
      return items.map((n) => `stored ${n}`);
    }, 3);
    const results = [1, 2, 3, 4].map((n) => commit.submit(n));
    expect(writes).toEqual([]);
    await turn();
    expect(writes).toEqual([[1, 2, 3]]);
    results.push(...[5, 6, 7].map((n) => commit.submit(n)));
    release();
    expect(await Promise.all(results)).toEqual([1, 2, 3, 4, 5, 6, 7].map((n) => `stored ${n}`));
    expect(writes).toEqual([[1, 2, 3], [4, 5, 6], [7]]);
    expect(await commit.submit(8)).toBe('stored 8');
    expect(writes.at(-1)).toEqual([8]);
  });

  test('items submitted from separate callbacks of one turn share a write even when writing takes no time', async () => {
    const writes: number[][] = [];
    const commit = new GroupCommit<number, number>((items) => {
      writes.push(items);
      return Promise.resolve(items);
    }, 10);
    // As socket callbacks do: each submits, then its microtasks run before the next one.
    const results = await Promise.all(
      [1, 2, 3].map(
        (n) => new Promise<number>((resolve) => setTimeout(() => void commit.submit(n).then(resolve), 0)),
      ),
    );
    expect(results).toEqual([1, 2, 3]);
    expect(writes).toEqual([[1, 2, 3]]);
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
    const first = expect(commit.submit(1)).rejects.toThrow('database gone');
    await turn();
    const second = commit.submit(2);
    await first;
    expect(await second).toBe(2);
  });

  test('a batch stops before the item that would take it over maxWeight; a heavier item goes alone', async () => {
    const writes: number[][] = [];
    const commit = new GroupCommit<number, number>(
      (items) => {
        writes.push(items);
        return Promise.resolve(items);
      },
      10,
      (n) => n,
      5,
    );
    await Promise.all([1, 2, 3, 9, 1, 1].map((n) => commit.submit(n)));
    expect(writes).toEqual([[1, 2], [3], [9], [1, 1]]);
  });
});
