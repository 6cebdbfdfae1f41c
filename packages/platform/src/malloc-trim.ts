import type * as MallocTrimAddon from '@svc/malloc-trim';
import { monotonicMs } from './monotonic.js';

/** What @svc/malloc-trim exports when it is built. */
interface CHeapNative {
  /** glibc's malloc_trim(0); whether memory was given back. */
  trim(): boolean;
  /** glibc's mmap and trim thresholds set to their defaults (128 KiB) and no longer raised; whether both were set. */
  keepDefaultThresholds(): boolean;
}

let loading: Promise<CHeapNative | null> | undefined;

/**
 * Loads @svc/malloc-trim once. null where it is not built (no compiler at install, the one-file agent): then
 * nothing here does anything. Built against a C library other than glibc, its functions do nothing.
 */
function loadNative(): Promise<CHeapNative | null> {
  // The agent bundle is CommonJS: require() there, since import() would start node's ES module loader for this one
  // addon (~100 ms of CPU and several MiB, 2026-11-28).
  type Addon = Partial<typeof MallocTrimAddon>;
  const load: () => Promise<Addon & { default?: Addon }> =
    typeof require === 'function'
      ? // eslint-disable-next-line @typescript-eslint/no-require-imports -- see above
        () => Promise.resolve().then(() => require('@svc/malloc-trim') as Addon)
      : () => import('@svc/malloc-trim');
  loading ??= load().then(
    (module) => {
      const { trim, keepDefaultThresholds } = module.default ?? module;
      return trim && keepDefaultThresholds ? { trim, keepDefaultThresholds } : null;
    },
    () => null,
  );
  return loading;
}

/**
 * Keeps glibc's mmap and trim thresholds at their defaults (128 KiB). glibc raises them after any large block is
 * freed, and each thread's arena then keeps a free top that no trim gives back: after one 1 GiB tunnel node's
 * worker threads (V8's compiler, its GC helpers) held ~3 MiB, against ~0.6 MiB with the thresholds kept
 * (2026-11-25). Call it before a burst of work, once (loading the addon costs an idle process ~0.5 MiB).
 * Resolves with whether they were set.
 */
export async function keepCHeapThresholds(): Promise<boolean> {
  const native = await loadNative();
  return native?.keepDefaultThresholds() ?? false;
}

/**
 * Gives the free pages of the C heap back to the system: free() returns memory only from the top of glibc's heap,
 * so after a burst of large short-lived Buffers (a tunnel moves ~1 GB/s of them) the freed middle stays resident
 * (12 MiB after 1 GiB through an agent's tunnel, 2026-11-25). Resolves with how long the trim blocked the process
 * in ms, or undefined where it cannot trim.
 */
export async function trimCHeap(): Promise<number | undefined> {
  const native = await loadNative();
  if (!native) return undefined;
  const start = monotonicMs();
  native.trim();
  return monotonicMs() - start;
}
