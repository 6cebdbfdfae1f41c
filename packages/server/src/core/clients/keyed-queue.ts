/**
 * Runs operations one after another per key, so the writes of one client reach the database in the order they
 * were made even on a connection pool (a quick disconnect + reconnect must not end up stored as disconnected).
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<void>>();

  /** Queues `op` behind earlier operations of `key`; the returned promise settles with `op`. */
  run<T>(key: string, op: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(op);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Resolves when every operation queued so far has settled. */
  async drain(): Promise<void> {
    while (this.tails.size > 0) await Promise.all([...this.tails.values()]);
  }
}
