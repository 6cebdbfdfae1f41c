import { collectGarbage } from './gc.js';
import { monotonicMs } from './monotonic.js';

/**
 * Bytes relayed between two young-generation collections (see RelayGarbage). After 512 MiB through a tunnel, the
 * one-file agent kept 7-13 MiB over its idle RSS at 1-2 MiB, 12-20 at 4 MiB, 40 without (2026-11-25).
 */
export const RELAY_GC_BYTES = 2 * 1024 * 1024;
/**
 * Least time between two of them, so that they take at most ~3% of the event loop however fast the tunnel: at
 * 600 MiB/s one every 2 MiB cost the agent 0.13 CPU s/GiB (+10%) downloading; above ~200 MiB/s this stretches
 * the interval instead.
 */
export const RELAY_GC_MIN_INTERVAL_MS = 10;

export interface RelayGarbageOptions {
  everyBytes?: number;
  minIntervalMs?: number;
  /** Called after each collection. */
  collected?: () => void;
}

/**
 * Collects the Buffers that relaying leaves behind before they pile up. Every chunk through a tunnel leaves a
 * few Buffers (socket reads, SSH packets, WebSocket frames) that die at once; their memory is outside V8's heap,
 * and V8 collects them only once tens of MiB are waiting (a scavenge every ~20 MiB relayed, measured). glibc
 * hands them out from its main heap, which grows by that much, ~30 MiB, and keeps it once they are freed: it
 * gives back only the heap's top, and a live block near the top holds everything below (after 512 MiB: 40 MB
 * in the main heap, 3.5 MB of it in use). A young-generation collection after every `everyBytes` relayed bytes,
 * and `minIntervalMs` after the previous one, keeps the dead Buffers, and so the heap, to a few MiB. With only
 * the chunks in flight alive, each is a pause of about 0.25 ms (single-threaded, see the agent's main.ts).
 */
export class RelayGarbage {
  private relayed = 0;
  private scheduled = false;
  private lastAt = -Infinity;
  private readonly everyBytes: number;
  private readonly minIntervalMs: number;
  private readonly collected: () => void;

  constructor(options: RelayGarbageOptions = {}) {
    this.everyBytes = options.everyBytes ?? RELAY_GC_BYTES;
    this.minIntervalMs = options.minIntervalMs ?? RELAY_GC_MIN_INTERVAL_MS;
    this.collected = options.collected ?? (() => {});
  }

  /** `bytes` were relayed. */
  add(bytes: number): void {
    this.relayed += bytes;
    if (this.relayed < this.everyBytes || this.scheduled) return;
    if (monotonicMs() - this.lastAt < this.minIntervalMs) return;
    this.scheduled = true;
    // After the callbacks of this turn, so that the chunk in hand and its copies are garbage by then.
    setImmediate(() => {
      this.scheduled = false;
      this.relayed = 0;
      collectGarbage('minor');
      this.lastAt = monotonicMs();
      this.collected();
    });
  }
}
