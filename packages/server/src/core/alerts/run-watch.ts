import type { AlertTimers } from './ports.js';

/** A run's state as the alerts need it. */
export interface RunOutcome {
  status: string;
  counts: Record<string, number>;
  schedule_id: string | null;
}

export interface RunWatchDeps {
  /** The run's overall status and child counts (one counting query); undefined when it is gone. */
  outcome(jid: string): Promise<RunOutcome | undefined>;
  /** Told once per run that ended with a failed child. */
  failed(jid: string, outcome: RunOutcome): void;
  timers: AlertTimers;
  logger: { warn(obj: object, msg: string): void };
  /** Job ends coalesce into one look at the runs still going this long after the first (default 250 ms). */
  settleMs?: number;
  /** Runs followed at most; the oldest are dropped beyond it. */
  maxRuns?: number;
}

/**
 * Tells when multi-client runs end with failures. A run is looked at when it has dispatched all its clients; while
 * children still run it is kept, and job ends (any job) trigger one coalesced look at the kept runs, so nothing
 * polls and a burst of results costs one query per kept run.
 */
export class RunWatch {
  private readonly open = new Set<string>();
  private timer: unknown;
  private closed = false;

  constructor(private readonly deps: RunWatchDeps) {}

  /** The run has dispatched every client (its runner returned). */
  dispatched(jid: string): void {
    if (this.closed) return;
    this.open.add(jid);
    const max = this.deps.maxRuns ?? 10_000;
    if (this.open.size > max) this.open.delete(this.open.values().next().value as string);
    void this.look([jid]);
  }

  /** Some job finished: look at the open runs soon. */
  jobFinished(): void {
    if (this.open.size === 0 || this.timer !== undefined) return;
    this.timer = this.deps.timers.setTimeout(() => {
      this.timer = undefined;
      void this.look([...this.open]);
    }, this.deps.settleMs ?? 250);
  }

  close(): void {
    this.closed = true;
    if (this.timer !== undefined) this.deps.timers.clearTimeout(this.timer);
    this.open.clear();
  }

  private async look(jids: readonly string[]): Promise<void> {
    for (const jid of jids) {
      try {
        const outcome = await this.deps.outcome(jid);
        if (!this.open.has(jid)) continue;
        if (!outcome) {
          this.open.delete(jid);
          continue;
        }
        if (outcome.status === 'running') continue;
        this.open.delete(jid);
        if ((outcome.counts.failed ?? 0) > 0 || outcome.status === 'failed') this.deps.failed(jid, outcome);
      } catch (err) {
        this.deps.logger.warn({ err, jid }, 'alerts: could not read the state of a run');
      }
    }
  }
}
