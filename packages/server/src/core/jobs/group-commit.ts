/**
 * Writes items in batches without waiting for a batch to fill: the first item is written at once, and whatever
 * arrives while a write is under way goes into the next one (at most `maxBatch` items). Under load many results
 * share one transaction; alone, a result is written as soon as it arrives.
 */
export class GroupCommit<T, R> {
  private readonly queue: { item: T; resolve: (result: R) => void; reject: (err: unknown) => void }[] = [];
  private writing = false;

  constructor(
    private readonly write: (items: T[]) => Promise<R[]>,
    private readonly maxBatch: number,
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
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        const results = await this.write(batch.map((entry) => entry.item));
        batch.forEach((entry, i) => entry.resolve(results[i] as R));
      } catch (err) {
        for (const entry of batch) entry.reject(err);
      }
    }
    this.writing = false;
  }
}
