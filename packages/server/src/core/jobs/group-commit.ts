/**
 * Writes items in batches without waiting for a batch to fill: the first item is written at once, and whatever
 * arrives while a write is under way goes into the next one (at most `maxBatch` items, and at most `maxWeight`
 * by `weigh` unless a single item weighs more). Under load many items share one transaction; alone, an item is
 * written as soon as it arrives.
 */
export class GroupCommit<T, R> {
  private readonly queue: { item: T; resolve: (result: R) => void; reject: (err: unknown) => void }[] = [];
  private writing = false;

  constructor(
    private readonly write: (items: T[]) => Promise<R[]>,
    private readonly maxBatch: number,
    private readonly weigh: (item: T) => number = () => 0,
    private readonly maxWeight = Infinity,
  ) {}

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.writing) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.writing = true;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.batchSize());
      try {
        const results = await this.write(batch.map((entry) => entry.item));
        batch.forEach((entry, i) => entry.resolve(results[i] as R));
      } catch (err) {
        for (const entry of batch) entry.reject(err);
      }
    }
    this.writing = false;
  }

  /** How many queued items the next batch takes: at least one. */
  private batchSize(): number {
    const limit = Math.min(this.maxBatch, this.queue.length);
    let weight = 0;
    for (let n = 0; n < limit; n++) {
      weight += this.weigh((this.queue[n] as { item: T }).item);
      if (n > 0 && weight > this.maxWeight) return n;
    }
    return Math.max(1, limit);
  }
}
