/** Rows handled between two turns of the event loop when a long list is worked through. */
export const SLICE = 500;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Calls `fn` for every item, handing the event loop back between slices of `size`: a list of tens of thousands of
 * rows read at once (a cluster node reading every client) must not hold up the requests that arrive meanwhile.
 */
export async function forEachInSlices<T>(
  items: readonly T[],
  fn: (item: T) => void,
  size = SLICE,
): Promise<void> {
  for (let at = 0; at < items.length; at += size) {
    if (at > 0) await nextTurn();
    const end = Math.min(items.length, at + size);
    for (let i = at; i < end; i++) fn(items[i] as T);
  }
}

/** `items.map(fn)`, in slices as forEachInSlices. */
export async function mapInSlices<T, R>(items: readonly T[], fn: (item: T) => R, size = SLICE): Promise<R[]> {
  const out: R[] = [];
  await forEachInSlices(items, (item) => out.push(fn(item)), size);
  return out;
}
