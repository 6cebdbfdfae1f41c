/**
 * Runs `work` on every item with at most `width` calls in flight: NATS requests of one connection are pipelined,
 * so thousands of keys take a few round trips' time rather than one round trip each, without queueing all of
 * them at once. A failed call does not stop the others; the failures are counted.
 */
export async function pipelined<T>(
  items: Iterable<T>,
  width: number,
  work: (item: T) => Promise<void>,
): Promise<{ failed: number }> {
  const iterator = items[Symbol.iterator]();
  let failed = 0;
  const worker = async (): Promise<void> => {
    for (let next = iterator.next(); next.done !== true; next = iterator.next()) {
      await work(next.value).catch(() => {
        failed += 1;
      });
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, width) }, worker));
  return { failed };
}
