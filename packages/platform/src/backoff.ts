export interface BackoffOptions {
  /** Cap of the first delay; default 1 s. */
  baseMs?: number;
  /** Largest cap; default 5 min. */
  maxMs?: number;
  /** Uniform random number in [0, 1); default Math.random. */
  random?: () => number;
  /** Waits `ms` or until the signal aborts; default a timer. Tests pass a fake clock. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Resolves after `ms`, or early (without throwing) when the signal aborts. */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Exponential backoff with full jitter: the n-th delay (from 0) is uniform in [0, min(max, base·2^n)).
 * Full jitter spreads the reconnects of many agents after a server restart instead of bunching them.
 */
export class Backoff {
  private attempt = 0;
  readonly baseMs: number;
  readonly maxMs: number;
  private readonly random: () => number;
  private readonly sleeper: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(options: BackoffOptions = {}) {
    this.baseMs = options.baseMs ?? 1000;
    this.maxMs = options.maxMs ?? 300_000;
    if (!(this.baseMs > 0) || !(this.maxMs >= this.baseMs))
      throw new RangeError('backoff needs 0 < baseMs <= maxMs');
    this.random = options.random ?? Math.random;
    this.sleeper = options.sleep ?? abortableSleep;
  }

  /** How many delays were handed out since the last reset. */
  get attempts(): number {
    return this.attempt;
  }

  /** The upper bound of the next delay. */
  get currentCapMs(): number {
    // Past 2^31 the cap is long since at max; stop growing the exponent to keep the number finite.
    return Math.min(this.maxMs, this.baseMs * 2 ** Math.min(this.attempt, 31));
  }

  /** The next delay in milliseconds; each call raises the cap for the one after. */
  next(): number {
    const cap = this.currentCapMs;
    this.attempt++;
    return Math.min(cap, Math.floor(this.random() * cap));
  }

  /**
   * The delay after the server said when to come back (Retry-After): that long, the base delay at least (a proxy
   * answering `Retry-After: 0` again and again must not be hammered), plus up to a second at random, so agents told
   * the same second do not all arrive at its start; at most `maxMs`. The backoff does not grow: a busy server that
   * names its time is not a failing one.
   */
  retryAfter(serverMs: number): number {
    const wait = Math.max(serverMs, this.baseMs);
    return Math.min(this.maxMs, wait + Math.floor(this.random() * Math.min(1000, wait)));
  }

  /** Starts again from the base delay, e.g. after a connection that worked. */
  reset(): void {
    this.attempt = 0;
  }

  /** Waits `ms` with the configured clock; resolves early when the signal aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.sleeper(ms, signal);
  }
}
