/** Rows handled between two turns of the event loop when a long list is worked through. */
export const SLICE = 500;
/**
 * The longest one slice works before it hands the event loop back, whatever its count: parsing a slice of 500
 * client rows (their details' JSON) took ~50 ms with a simulated fleet's facts, a stall for every request meanwhile.
 */
export const SLICE_MS = 5;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Calls `fn` for every item, handing the event loop back between slices of at most `size` items and `budgetMs` of
 * work: a list of tens of thousands of rows read at once (a cluster node reading every client) must not hold up
 * the requests that arrive meanwhile.
 */
export async function forEachInSlices<T>(
  items: readonly T[],
  fn: (item: T) => void,
  size = SLICE,
  budgetMs = SLICE_MS,
): Promise<void> {
  let at = 0;
  while (at < items.length) {
    if (at > 0) await nextTurn();
    const end = Math.min(items.length, at + size);
    const until = performance.now() + budgetMs;
    do fn(items[at++] as T);
    while (at < end && performance.now() < until);
  }
}

/** `items.map(fn)`, in slices as forEachInSlices. */
export async function mapInSlices<T, R>(
  items: readonly T[],
  fn: (item: T) => R,
  size = SLICE,
  budgetMs = SLICE_MS,
): Promise<R[]> {
  const out: R[] = [];
  await forEachInSlices(items, (item) => out.push(fn(item)), size, budgetMs);
  return out;
}
