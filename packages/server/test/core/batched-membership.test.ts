import { describe, expect, test } from 'vitest';
import { BatchedMembership } from '../../src/core/batched-membership.js';

describe('BatchedMembership', () => {
  test('keys asked within the window go to one lookup; each caller hears about its own key', async () => {
    const lookups: string[][] = [];
    const members = new BatchedMembership(
      (keys) => {
        lookups.push(keys);
        return Promise.resolve(new Set(keys.filter((k) => k.startsWith('yes'))));
      },
      { windowMs: 20, maxKeys: 100 },
    );
    const answers = await Promise.all(['yes-1', 'no-1', 'yes-1', 'no-2'].map((k) => members.has(k)));
    expect(answers).toEqual([true, false, true, false]);
    expect(lookups).toEqual([['yes-1', 'no-1', 'no-2']]);
    // A later question is a new lookup: the answer is never older than the question.
    expect(await members.has('yes-2')).toBe(true);
    expect(lookups).toHaveLength(2);
  });

  test('a full batch goes at once, without waiting out the window', async () => {
    const lookups: string[][] = [];
    const members = new BatchedMembership(
      (keys) => {
        lookups.push(keys);
        return Promise.resolve(new Set<string>());
      },
      { windowMs: 60_000, maxKeys: 3 },
    );
    const answers = await Promise.all(['a', 'b', 'c'].map((k) => members.has(k)));
    expect(answers).toEqual([false, false, false]);
    expect(lookups).toEqual([['a', 'b', 'c']]);
  });

  test('a failed lookup fails every caller of its batch, and the next batch is asked again', async () => {
    let fail = true;
    const members = new BatchedMembership(
      (keys) => (fail ? Promise.reject(new Error('database away')) : Promise.resolve(new Set(keys))),
      { windowMs: 5, maxKeys: 10 },
    );
    const results = await Promise.allSettled([members.has('a'), members.has('b')]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    expect(await members.has('a')).toBe(true);
  });
});
