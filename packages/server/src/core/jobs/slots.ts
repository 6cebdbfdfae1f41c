/**
 * A counting semaphore for a bounded in-flight window: `take` waits for a free slot, `release` frees one, `idle`
 * waits until every slot is free again. Waiters are served in order and hold nothing per slot but a resolver.
 */
export class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];
  private readonly idleWaiters: (() => void)[] = [];

  constructor(private readonly size: number) {
    this.free = Math.max(1, size);
  }

  /** Resolves once a slot is free (at once when one is); the caller must release it later. */
  take(): Promise<void> {
    if (this.free > 0) {
      this.free -= 1;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Resolves once at least one slot is free, without taking it. */
  async available(): Promise<void> {
    await this.take();
    this.release();
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) return next();
    this.free += 1;
    if (this.free === Math.max(1, this.size)) for (const wake of this.idleWaiters.splice(0)) wake();
  }

  /** Resolves once nothing is in flight. */
  idle(): Promise<void> {
    if (this.free === Math.max(1, this.size)) return Promise.resolve();
    return new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }
}
