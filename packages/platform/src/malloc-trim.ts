/** glibc's malloc_trim(0); returns whether memory was given back. */
type Trim = () => boolean;

let loading: Promise<Trim | null> | undefined;

/**
 * Loads @svc/malloc-trim's native trim() once, on first use (an idle process never maps the addon). null where
 * it is not built (no compiler at install, a platform without glibc, the one-file agent).
 */
function loadTrim(): Promise<Trim | null> {
  loading ??= import('@svc/malloc-trim').then(
    (module: { trim?: Trim | null; default?: { trim?: Trim | null } }) =>
      module.trim ?? module.default?.trim ?? null,
    () => null,
  );
  return loading;
}

/**
 * Gives the free pages of the C heap back to the system: free() returns memory only from the top of glibc's heap,
 * so after a burst of large short-lived Buffers (a tunnel moves ~1 GB/s of them) the freed middle stays resident
 * (12 MiB after 1 GiB through an agent's tunnel, 2026-11-25). Resolves with how long the trim blocked the process
 * in ms, or undefined where it cannot trim.
 */
export async function trimCHeap(): Promise<number | undefined> {
  const trim = await loadTrim();
  if (!trim) return undefined;
  const start = performance.now();
  trim();
  return performance.now() - start;
}
