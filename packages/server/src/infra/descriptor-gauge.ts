import { countOpenDescriptors, countOpenDescriptorsInPool, readDescriptorLimit } from '@svc/platform';

/**
 * How often /proc/self/fd is counted again. Listing it is slow where there are many (here 320 ms for 8,000, in a
 * thread of the pool, not the event loop): between two counts the connections of the agent port and the API are tracked instead.
 */
const RECOUNT_INTERVAL_MS = 30_000;

/**
 * Descriptors kept for the API, the database, log and vault files and tunnel connections: new agents are refused
 * once fewer than this are free. 5 % of the limit, at least 64 and at most 1,000 (20,000 → 19,000 agents).
 * It also absorbs what those open between two counts.
 */
export const descriptorReserve = (limit: number): number =>
  Math.min(1_000, Math.max(64, Math.round(limit * 0.05)));

export interface DescriptorUse {
  /** Open descriptors: the last count of /proc/self/fd plus the tracked connections opened since, less closed. */
  used: number;
  limit: number;
  /** Agents are refused from here on. */
  agentHighWater: number;
}

export type DescriptorCount = number | 'exhausted' | undefined;

/**
 * What svcd knows of its descriptors: the soft RLIMIT_NOFILE and how many are open. Agent admission asks it before
 * each new agent; it answers from memory. It knows nothing where there is no /proc or no limit: then it admits
 * everything.
 */
export class DescriptorGauge {
  readonly reserve: number;
  private counted: number | undefined;
  /** Tracked connections opened less closed since the count in `counted` was started. */
  private delta = 0;
  private counting = false;
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly count: () => Promise<DescriptorCount> = countOpenDescriptorsInPool;

  constructor(
    /** The soft limit; Infinity for none. */
    readonly limit: number,
    options: {
      reserve?: number;
      /** Counts the open descriptors; the first count is synchronous (few are open at start). */
      count?: () => Promise<DescriptorCount>;
      firstCount?: () => DescriptorCount;
      recountMs?: number;
    } = {},
  ) {
    this.reserve = Math.min(options.reserve ?? descriptorReserve(limit), limit);
    if (!Number.isFinite(limit)) return;
    this.apply((options.firstCount ?? countOpenDescriptors)());
    this.count = options.count ?? countOpenDescriptorsInPool;
    this.timer = setInterval(() => void this.recount(), options.recountMs ?? RECOUNT_INTERVAL_MS);
    this.timer.unref();
  }

  /** The current soft limit of this process (read from /proc/self/limits); a gauge that admits all elsewhere. */
  static ofThisProcess(): DescriptorGauge {
    return new DescriptorGauge(readDescriptorLimit()?.soft ?? Infinity);
  }

  /** Undefined where it cannot know. */
  use(): DescriptorUse | undefined {
    if (this.counted === undefined) return undefined;
    return {
      used: Math.max(0, Math.min(this.limit, this.counted + this.delta)),
      limit: this.limit,
      agentHighWater: this.limit - this.reserve,
    };
  }

  /** Tracks the connections of a listener (the agent port, the API) between two counts. */
  readonly track = (socket: { once(event: 'close', listener: () => void): unknown }): void => {
    this.delta += 1;
    socket.once('close', this.untrack);
  };

  private readonly untrack = (): void => {
    this.delta -= 1;
  };

  /** Whether another agent may take a descriptor: below the limit less the reserve. */
  admitsAgent(): boolean {
    const use = this.use();
    return use === undefined || use.used < use.agentHighWater;
  }

  /**
   * Whether a new connection on the agent port may be kept long enough to be answered. Past half the reserve it is
   * closed unread, so that connections that never become agents cannot eat the rest of the reserve.
   */
  admitsConnection(): boolean {
    const use = this.use();
    return use === undefined || use.used < this.limit - Math.ceil(this.reserve / 2);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Counts again; connections opened or closed while the count runs stay in the delta. */
  async recount(): Promise<void> {
    if (this.counting) return;
    this.counting = true;
    const deltaBefore = this.delta;
    try {
      const counted = await this.count();
      if (counted === undefined) return;
      this.delta -= deltaBefore;
      this.apply(counted);
    } finally {
      this.counting = false;
    }
  }

  private apply(counted: DescriptorCount): void {
    if (counted !== undefined) this.counted = counted === 'exhausted' ? this.limit : counted;
  }
}
