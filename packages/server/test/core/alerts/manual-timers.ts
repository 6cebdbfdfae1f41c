import type { AlertTimers } from '../../../src/core/alerts/ports.js';

/** Timers moved by hand with a clock they share: `advance(ms)` fires what falls due, in order. */
export class ManualTimers implements AlertTimers {
  now = Date.parse('2026-01-01T00:00:00Z');
  private seq = 0;
  private readonly due = new Map<number, { at: number; fn: () => void }>();
  readonly clock = { now: () => new Date(this.now) };

  setTimeout(fn: () => void, ms: number): unknown {
    this.seq += 1;
    this.due.set(this.seq, { at: this.now + ms, fn });
    return this.seq;
  }

  clearTimeout(handle: unknown): void {
    this.due.delete(handle as number);
  }

  /** Pending timers' delays from now, soonest first. */
  delays(): number[] {
    return [...this.due.values()].map((t) => t.at - this.now).sort((a, b) => a - b);
  }

  advance(ms: number): void {
    const end = this.now + ms;
    for (;;) {
      const next = [...this.due.entries()].sort((a, b) => a[1].at - b[1].at)[0];
      if (!next || next[1].at > end) break;
      this.due.delete(next[0]);
      this.now = next[1].at;
      next[1].fn();
    }
    this.now = end;
  }
}

/** Lets pending promise callbacks run. */
export const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
