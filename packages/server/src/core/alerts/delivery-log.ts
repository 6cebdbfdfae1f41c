import type { AlertDelivery, ListQuery } from '@svc/protocol';
import type { AlertDeliveryRepository, AlertTimers, DeliveryRecorder, NewAlertDelivery } from './ports.js';

export interface DeliveryLogDeps {
  repository: AlertDeliveryRepository;
  /** This svcd, stored with each attempt (the cluster node id, or the host name). */
  node: string;
  /** `[alerts] log_size`: how many attempts the database keeps (the newest). */
  size: number;
  timers: AlertTimers;
  logger: { warn(obj: object, msg: string): void };
  /** Wait after the first queued attempt before writing, so a burst is one INSERT (default 50 ms). */
  flushDelayMs?: number;
  /** Wait before writing again after the database refused a write (default 5 s). */
  retryDelayMs?: number;
  /** Attempts held in memory while the database does not take them (default `size`); the oldest go first. */
  maxQueued?: number;
}

type Unstored = Omit<AlertDelivery, 'id'>;

/**
 * The alert delivery log, kept in the database so that it outlives a restart and every node of a cluster lists
 * the attempts of all. `add` only queues (a delivery never waits for the database and never fails because of
 * it); a timer writes the queue in one INSERT. A failed write keeps the attempts in memory (at most `maxQueued`,
 * the oldest dropped first) and tries again later. After every `size / 10` attempts written the rows beyond the
 * newest `size` are deleted in the background, so the table holds at most about 1.1 × `size` rows per writing
 * node.
 */
export class DeliveryLog implements DeliveryRecorder {
  private queue: Unstored[] = [];
  private timer: unknown;
  private writing: Promise<void> | undefined;
  private purging: Promise<void> | undefined;
  private sincePurge = 0;
  private droppedCount = 0;
  /** A write failed and none succeeded since (one warning per outage). */
  private failing = false;
  private warnedDrop = false;
  private closed = false;
  /** Attempts written between two purges. */
  readonly purgeEvery: number;
  private readonly maxQueued: number;

  constructor(private readonly deps: DeliveryLogDeps) {
    this.purgeEvery = Math.max(1, Math.ceil(deps.size / 10));
    this.maxQueued = Math.max(1, deps.maxQueued ?? deps.size);
  }

  /** Attempts dropped since start because the database did not take them in time. */
  get dropped(): number {
    return this.droppedCount;
  }

  /** Attempts waiting to be written. */
  get queued(): number {
    return this.queue.length;
  }

  add(entry: NewAlertDelivery): void {
    if (this.closed) return;
    if (this.queue.length >= this.maxQueued) {
      this.queue.shift();
      this.dropOne();
    }
    this.queue.push({ ...entry, node: this.deps.node });
    this.schedule(this.deps.flushDelayMs ?? 50);
  }

  /** Writes what is queued now. Never rejects: a failed write is logged and kept for a later one. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    this.writing = this.write(batch).finally(() => {
      this.writing = undefined;
    });
    await this.writing;
  }

  /** Deletes the attempts beyond the newest `size`. Never rejects; one purge at a time. */
  purge(): Promise<void> {
    this.purging ??= this.keepNewest().finally(() => {
      this.purging = undefined;
    });
    return this.purging;
  }

  /** The stored attempts (this node's queued ones written first), with the list grammar. */
  async list(query: ListQuery): Promise<{ data: AlertDelivery[]; count: number }> {
    await this.flush();
    return this.deps.repository.list(query);
  }

  /** Writes what is queued, waiting at most `waitMs` (a database that does not answer), then stops. */
  async close(waitMs = 5000): Promise<void> {
    if (this.timer !== undefined) this.deps.timers.clearTimeout(this.timer);
    this.timer = undefined;
    let handle: unknown;
    const gaveUp = new Promise<void>((resolve) => {
      handle = this.deps.timers.setTimeout(resolve, waitMs);
    });
    await Promise.race([this.flush().then(() => this.purging), gaveUp]);
    this.deps.timers.clearTimeout(handle);
    this.closed = true;
    if (this.timer !== undefined) this.deps.timers.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(ms: number): void {
    if (this.timer !== undefined || this.closed) return;
    this.timer = this.deps.timers.setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, ms);
  }

  private dropOne(): void {
    this.droppedCount += 1;
    if (this.warnedDrop) return;
    this.warnedDrop = true;
    this.deps.logger.warn(
      { kept: this.maxQueued },
      'alert delivery log: the database does not take the attempts; the oldest waiting ones are dropped',
    );
  }

  private async write(batch: Unstored[]): Promise<void> {
    try {
      await this.deps.repository.append(batch);
    } catch (err) {
      const all = [...batch, ...this.queue];
      const over = all.length - this.maxQueued;
      for (let i = 0; i < over; i += 1) this.dropOne();
      this.queue = over > 0 ? all.slice(over) : all;
      if (!this.failing)
        this.deps.logger.warn(
          { err, waiting: this.queue.length },
          'alert delivery log: could not write to the database; the attempts wait in memory and are written later',
        );
      this.failing = true;
      this.schedule(this.deps.retryDelayMs ?? 5000);
      return;
    }
    this.failing = false;
    this.warnedDrop = false;
    this.sincePurge += batch.length;
    if (this.sincePurge >= this.purgeEvery) void this.purge();
  }

  private async keepNewest(): Promise<void> {
    const written = this.sincePurge;
    this.sincePurge = 0;
    try {
      await this.deps.repository.keepNewest(this.deps.size);
    } catch (err) {
      // Counted again so that the next write tries once more.
      this.sincePurge += written;
      this.deps.logger.warn({ err }, 'alert delivery log: could not delete the oldest attempts');
    }
  }
}
