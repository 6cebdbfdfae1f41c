import { performance } from 'node:perf_hooks';
import { collectGarbage } from './gc.js';
import { trimCHeap } from './malloc-trim.js';

/** Quiet time after the last burst of work before collecting, so back-to-back bursts share one collection. */
export const RECLAIM_QUIET_MS = 3_000;
/**
 * Between the two collections. The first one's concurrent sweeping is done by then, and the second comes more than
 * 5 s after the burst: V8 shrinks a young generation the burst grew only at a collection that sees a low
 * allocation rate over its last ~5 s (one 1 s after the first left 4 MiB more of it resident after 400 commands).
 */
export const SECOND_COLLECTION_MS = 3_000;

/**
 * Event-loop utilisation above which a collection waits: its pause, hundreds of ms with a heap of 15,000 agents,
 * would hold up every request of a process that is busy (agents reconnecting after a node failed, say).
 */
export const BUSY_UTILIZATION = 0.5;
/** The longest a collection waits for a quieter event loop; then it runs anyway. */
export const MAX_POSTPONE_MS = 60_000;

export interface MemoryReclaimTiming {
  /** Quiet time after the last burst before the first collection. */
  quietMs?: number;
  /** Between the first collection and the second. */
  secondCollectionMs?: number;
  /** Runs one collection and returns its pause in ms (collectGarbage; a test watches its own through this). */
  collect?: (type: 'major') => number;
  /** The longest a collection waits while the event loop is busy (MAX_POSTPONE_MS). */
  maxPostponeMs?: number;
  /** Event-loop utilisation above which a collection waits (BUSY_UTILIZATION; 1: never waits). */
  busyUtilization?: number;
}

export interface ReclaimOutcome {
  pausesMs: [number, number];
  /** How long giving the C heap's free pages back took; undefined where it cannot be done (see trimCHeap). */
  trimMs: number | undefined;
  /** Bytes, before the first collection and after the second; undefined when they could not be read. */
  rssBefore: number | undefined;
  rssAfter: number | undefined;
}

/**
 * process.memoryUsage.rss() reads /proc/self/stat, which takes a descriptor: at the descriptor limit it throws
 * EMFILE, and thrown from a timer that would end the process. The reclaim goes on without the figure.
 */
function readRss(): number | undefined {
  try {
    return process.memoryUsage.rss();
  } catch {
    return undefined;
  }
}

/** A reclaim's outcome as log fields: pauses and trim in ms, RSS before and after in MiB. */
export function reclaimLogFields({ pausesMs, trimMs, rssBefore, rssAfter }: ReclaimOutcome) {
  return {
    pauses_ms: pausesMs.map((ms) => Math.round(ms)),
    trim_ms: trimMs === undefined ? null : Math.round(trimMs * 10) / 10,
    rss_mib: [rssBefore, rssAfter].map((bytes) => (bytes === undefined ? null : Math.round(bytes / 2 ** 20))),
  };
}

/**
 * Gives back the memory a burst of work left behind, once the work has stopped. V8 lets its heap grow under load
 * and only shrinks it at its next major GC, which a process that has gone quiet may not run for hours, so the
 * process keeps the pages. Once no burst has been reported for `quietMs`, two full collections three seconds apart
 * free them: the first finds the garbage, but leaves the surviving objects scattered over the grown pages; the
 * second moves them together so that V8 can give the emptied pages back. Then the C heap's free pages go back too
 * (trimCHeap): the Buffers' memory, freed by those collections. Each is a pause of the process, longer with a
 * larger live heap (see BENCHMARKS.md), once per burst, and waits while the event loop is busy (whenIdle).
 */
export class MemoryReclaim {
  private timer: NodeJS.Timeout | undefined;
  private secondPending = false;
  private readonly quietMs: number;
  private readonly secondCollectionMs: number;
  private readonly collect: (type: 'major') => number;
  private readonly maxPostponeMs: number;
  private readonly busyUtilization: number;

  constructor(
    /** Told each reclaim's pauses, its trim and the RSS before and after, for the log. */
    private readonly report: (outcome: ReclaimOutcome) => void = () => {},
    timing: MemoryReclaimTiming = {},
  ) {
    this.quietMs = timing.quietMs ?? RECLAIM_QUIET_MS;
    this.secondCollectionMs = timing.secondCollectionMs ?? SECOND_COLLECTION_MS;
    this.collect = timing.collect ?? collectGarbage;
    this.maxPostponeMs = timing.maxPostponeMs ?? MAX_POSTPONE_MS;
    this.busyUtilization = timing.busyUtilization ?? BUSY_UTILIZATION;
  }

  /**
   * True between the first collection and the second: the reclaim has begun. A burst reported now starts it over
   * (afterLoad), paying for the first collection again; a caller whose bursts are small may let it finish instead.
   */
  get collecting(): boolean {
    return this.secondPending;
  }

  /** A burst of work that leaves garbage has happened (or is still going on); the reclaim waits `quietMs` of quiet. */
  afterLoad(quietMs = this.quietMs): void {
    this.secondPending = false;
    this.whenIdle(quietMs, () => {
      const rssBefore = readRss();
      const first = this.collect('major');
      this.secondPending = true;
      this.whenIdle(this.secondCollectionMs, () => {
        this.secondPending = false;
        const second = this.collect('major');
        void trimCHeap().then((trimMs) =>
          this.report({ pausesMs: [first, second], trimMs, rssBefore, rssAfter: readRss() }),
        );
      });
    });
  }

  stop(): void {
    this.secondPending = false;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * Runs `task` after `ms`, and again `ms` later each time the event loop was busier than busyUtilization over the
   * wait (for at most maxPostponeMs in all), unless another burst is reported first.
   */
  private whenIdle(ms: number, task: () => void, postponed = 0): void {
    const since = performance.eventLoopUtilization();
    this.schedule(ms, () => {
      const { idle, active, utilization } = performance.eventLoopUtilization(since);
      // A wait that took far less real time than it was set for (its timer driven by hand) tells nothing.
      const busy = idle + active >= ms / 2 && utilization > this.busyUtilization;
      if (busy && postponed < this.maxPostponeMs) this.whenIdle(ms, task, postponed + ms);
      else task();
    });
  }

  /** Runs `task` after `ms` unless another burst is reported first (which starts the wait again). */
  private schedule(ms: number, task: () => void): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      task();
    }, ms);
    this.timer.unref();
  }
}
