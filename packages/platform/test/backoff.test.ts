import { describe, expect, test, vi } from 'vitest';
import { Backoff, abortableSleep } from '@svc/platform';

describe('Backoff', () => {
  test('the cap doubles from the base up to the max', () => {
    const backoff = new Backoff({ baseMs: 1000, maxMs: 10_000, random: () => 0.999999 });
    const caps: number[] = [];
    for (let i = 0; i < 6; i++) {
      caps.push(backoff.currentCapMs);
      backoff.next();
    }
    expect(caps).toEqual([1000, 2000, 4000, 8000, 10_000, 10_000]);
  });

  test('full jitter: each delay lies in [0, cap)', () => {
    const low = new Backoff({ random: () => 0 });
    const high = new Backoff({ random: () => 0.9999999 });
    for (let i = 0; i < 20; i++) {
      const cap = high.currentCapMs;
      expect(low.next()).toBe(0);
      const delay = high.next();
      expect(delay).toBeGreaterThanOrEqual(cap - 1);
      expect(delay).toBeLessThan(cap);
    }
    expect(high.currentCapMs).toBe(300_000);
  });

  test('scales the random value by the cap', () => {
    const backoff = new Backoff({ baseMs: 1000, maxMs: 60_000, random: () => 0.5 });
    expect([backoff.next(), backoff.next(), backoff.next()]).toEqual([500, 1000, 2000]);
  });

  test('with Math.random every delay stays within bounds', () => {
    const backoff = new Backoff({ baseMs: 100, maxMs: 5000 });
    for (let i = 0; i < 200; i++) {
      const cap = backoff.currentCapMs;
      const delay = backoff.next();
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThan(cap);
    }
  });

  test('reset starts again from the base', () => {
    const backoff = new Backoff({ baseMs: 1000, maxMs: 300_000, random: () => 0.5 });
    for (let i = 0; i < 10; i++) backoff.next();
    expect(backoff.attempts).toBe(10);
    backoff.reset();
    expect(backoff.attempts).toBe(0);
    expect(backoff.currentCapMs).toBe(1000);
    expect(backoff.next()).toBe(500);
  });

  test('stays finite after very many attempts', () => {
    const backoff = new Backoff({ random: () => 0.5 });
    for (let i = 0; i < 5000; i++) backoff.next();
    expect(backoff.next()).toBe(150_000);
  });

  test('rejects a base above the max', () => {
    expect(() => new Backoff({ baseMs: 10, maxMs: 5 })).toThrow(RangeError);
    expect(() => new Backoff({ baseMs: 0 })).toThrow(RangeError);
  });

  test("retryAfter: the server's delay (the base at least) and up to a second more at random, capped by the max; the cap does not grow", () => {
    const backoff = new Backoff({ baseMs: 1000, maxMs: 10_000, random: () => 0.5 });
    expect(backoff.retryAfter(3000)).toBe(3500);
    expect(backoff.retryAfter(0)).toBe(1500);
    expect(new Backoff({ baseMs: 100, random: () => 0.5 }).retryAfter(400)).toBe(400 + 200);
    expect(backoff.retryAfter(60_000)).toBe(10_000);
    expect(backoff.attempts).toBe(0);
    expect(backoff.currentCapMs).toBe(1000);
  });

  test('sleeps with the injected clock', async () => {
    const sleep = vi.fn(() => Promise.resolve());
    const backoff = new Backoff({ sleep });
    const signal = new AbortController().signal;
    await backoff.sleep(1234, signal);
    expect(sleep).toHaveBeenCalledWith(1234, signal);
  });
});

describe('abortableSleep', () => {
  test('resolves after the delay', async () => {
    vi.useFakeTimers();
    try {
      let done = false;
      const sleeping = abortableSleep(1000).then(() => (done = true));
      await vi.advanceTimersByTimeAsync(999);
      expect(done).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await sleeping;
      expect(done).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  test('resolves early when aborted, and at once when already aborted', async () => {
    const controller = new AbortController();
    const sleeping = abortableSleep(60_000, controller.signal);
    controller.abort();
    await sleeping;
    await abortableSleep(60_000, controller.signal);
  });
});
