import { RECLAIM_QUIET_MS, type MemoryReclaim } from '@svc/platform';

/** A run on fewer clients than this leaves too little garbage to be worth a collection. */
export const RECLAIM_MIN_TARGETS = 500;

/**
 * What gives back the memory of large fan-outs: each client of a run leaves a few KiB of short-lived objects
 * that survive into V8's old generation, tens of MiB at 1,000 clients, hundreds at 10,000, which an svcd that
 * has gone quiet would keep. A full collection pauses svcd for about 50 ms at 1,000 clients (see BENCHMARKS.md),
 * so only runs of `minTargets` or more ask for one.
 */
export function reclaimAfterLargeRuns(
  reclaim: Pick<MemoryReclaim, 'afterLoad'>,
  minTargets = RECLAIM_MIN_TARGETS,
): (targets: number) => void {
  return (targets) => {
    if (targets >= minTargets) reclaim.afterLoad();
  };
}

/** Agents connecting within this long of each other are one burst. */
const CONNECT_BURST_GAP_MS = RECLAIM_QUIET_MS;
/** A burst of fewer agent connections leaves too little garbage to be worth a collection. */
export const RECLAIM_MIN_CONNECTS = 100;
/**
 * Quiet after a burst of agent connections before the reclaim. A cluster node taking over a failed node's agents
 * has lulls of a few seconds in the storm (agents backing off after a timeout); after 3 s of quiet the reclaim's two
 * full collections, ~700 ms each with 15,000 agents, landed in such lulls and held up the API.
 */
export const CONNECT_BURST_QUIET_MS = 10_000;

/**
 * What gives back the memory of a burst of agent connections (svcd restarted, a network coming back): each login
 * leaves short-lived objects (the SSH handshake, the hello) that a quiet svcd would keep until V8's next major GC,
 * which made svcd's RSS per agent read 31–43 KiB 20 s after connecting against 17 KiB after a full collection.
 * Once `minConnects` agents have connected no more than a few seconds apart, every further one asks for a reclaim,
 * which runs once the burst has been over for `quietMs` (CONNECT_BURST_QUIET_MS).
 */
export function reclaimAfterConnectBursts(
  reclaim: Pick<MemoryReclaim, 'afterLoad'>,
  {
    minConnects = RECLAIM_MIN_CONNECTS,
    quietMs = CONNECT_BURST_QUIET_MS,
    now = Date.now,
  }: { minConnects?: number; quietMs?: number | undefined; now?: () => number } = {},
): () => void {
  let burst = 0;
  let last = -Infinity;
  return () => {
    const at = now();
    burst = at - last > CONNECT_BURST_GAP_MS ? 1 : burst + 1;
    last = at;
    if (burst >= minConnects) reclaim.afterLoad(quietMs);
  };
}
