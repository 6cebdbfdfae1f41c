import { countOpenDescriptors, readDescriptorLimit } from '@svc/platform';

/** How long a count of /proc/self/fd is used before the next (with 19,000 agents one count takes ~2 ms). */
const COUNT_MAX_AGE_MS = 250;

/**
 * Descriptors kept for the API, the database, log and vault files and tunnel connections: new agents are refused
 * once fewer than this are free. 5 % of the limit, at least 64 and at most 1,000 (20,000 → 19,000 agents).
 */
export const descriptorReserve = (limit: number): number =>
  Math.min(1_000, Math.max(64, Math.round(limit * 0.05)));

export interface DescriptorUse {
  /** Open descriptors (a count at most COUNT_MAX_AGE_MS old plus the connections accepted since). */
  used: number;
  limit: number;
  /** Agents are refused from here on. */
  agentHighWater: number;
}

/**
 * What svcd knows of its descriptors: the soft RLIMIT_NOFILE and how many are open. Agent admission asks it before
 * each new agent. It knows nothing where there is no /proc or no limit: then it admits everything.
 */
export class DescriptorGauge {
  readonly reserve: number;
  private counted = 0;
  private countedAt = -Infinity;
  private acceptedSince = 0;

  constructor(
    /** The soft limit; Infinity for none. */
    readonly limit: number,
    reserve = descriptorReserve(limit),
    private readonly count: () => number | 'exhausted' | undefined = countOpenDescriptors,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.reserve = Math.min(reserve, limit);
  }

  /** The current soft limit of this process (read from /proc/self/limits); a gauge that admits all elsewhere. */
  static ofThisProcess(): DescriptorGauge {
    return new DescriptorGauge(readDescriptorLimit()?.soft ?? Infinity);
  }

  /** Undefined where it cannot know. */
  use(): DescriptorUse | undefined {
    if (!Number.isFinite(this.limit)) return undefined;
    const now = this.now();
    if (now - this.countedAt >= COUNT_MAX_AGE_MS) {
      const counted = this.count();
      if (counted === undefined) return undefined;
      this.counted = counted === 'exhausted' ? this.limit : counted;
      this.countedAt = now;
      this.acceptedSince = 0;
    }
    return {
      used: Math.min(this.limit, this.counted + this.acceptedSince),
      limit: this.limit,
      agentHighWater: this.limit - this.reserve,
    };
  }

  /** A connection was accepted: counted until the next read of /proc (a storm accepts hundreds in between). */
  accepted(): void {
    this.acceptedSince += 1;
  }

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
}
