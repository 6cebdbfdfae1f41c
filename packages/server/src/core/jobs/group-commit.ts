/**
 * Writes items in batches without waiting for a batch to fill: what arrives within one turn of the event loop is
 * written at the end of that turn, and whatever arrives while a write is under way goes into the next one (at
 * most `maxBatch` items, and at most `maxWeight` by `weigh` unless a single item weighs more). Under load many
 * items share one transaction; alone, an item is written as soon as the turn ends.
 *
 * Waiting for the end of the turn matters with SQLite: its writes run synchronously between promise hops, so a
 * write started at once would finish before the next socket's data is even read, and every item of a fan-out
 * would get a transaction of its own.
 */
export class GroupCommit<T, R> {
  private readonly queue: { item: T; resolve: (result: R) => void; reject: (err: unknown) => void }[] = [];
  /** A drain is scheduled or under way. */
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
      if (this.writing) return;
      this.writing = true;
      setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
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
