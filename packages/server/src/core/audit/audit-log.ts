import type { AuditForwarder, AuditLogger, AuditRecord, AuditRepository } from './ports.js';

export interface AuditLogOptions {
  repository: AuditRepository;
  forwarders?: readonly AuditForwarder[];
  log: AuditLogger;
  /** Records held in memory at most; more are dropped, counted and logged. */
  maxQueued?: number;
  /** Records per INSERT. */
  batchSize?: number;
  /** Wait after the first queued record before a flush (more records join the batch meanwhile). */
  flushDelayMs?: number;
}

export const AUDIT_QUEUE_DEFAULTS = { maxQueued: 50_000, batchSize: 500, flushDelayMs: 50 } as const;

/**
 * The audit log's write side: `record` only queues (no database round trip on the request path); a timer writes
 * the queue in batches. A full queue drops the record, counts it and logs a warning (at most once a minute). A
 * failed write keeps the batch for the next flush until the queue limit is reached.
 */
export class AuditLog {
  private queue: AuditRecord[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private flushing: Promise<void> | undefined;
  private droppedCount = 0;
  private lastDropLog = 0;
  private closed = false;
  private readonly maxQueued: number;
  private readonly batchSize: number;
  private readonly flushDelayMs: number;

  constructor(private readonly options: AuditLogOptions) {
    this.maxQueued = options.maxQueued ?? AUDIT_QUEUE_DEFAULTS.maxQueued;
    this.batchSize = options.batchSize ?? AUDIT_QUEUE_DEFAULTS.batchSize;
    this.flushDelayMs = options.flushDelayMs ?? AUDIT_QUEUE_DEFAULTS.flushDelayMs;
  }

  /** Records dropped because the queue was full, since start. */
  get dropped(): number {
    return this.droppedCount;
  }

  get queued(): number {
    return this.queue.length;
  }

  record(record: AuditRecord): void {
    for (const forwarder of this.options.forwarders ?? []) forwarder.forward(record);
    if (this.closed) return;
    if (this.queue.length >= this.maxQueued) {
      this.droppedCount++;
      const now = Date.now();
      if (now - this.lastDropLog >= 60_000) {
        this.lastDropLog = now;
        this.options.log.warn(
          { dropped: this.droppedCount, queued: this.queue.length },
          'audit log queue full: records dropped',
        );
      }
      return;
    }
    this.queue.push(record);
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.flushDelayMs);
  }

  /** Writes everything queued now; resolves when written (or the write failed and was logged). */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.queue.length === 0) return;
    const pending = this.queue;
    this.queue = [];
    this.flushing = this.write(pending).finally(() => {
      this.flushing = undefined;
    });
    await this.flushing;
  }

  private async write(records: AuditRecord[]): Promise<void> {
    for (let i = 0; i < records.length; i += this.batchSize) {
      const batch = records.slice(i, i + this.batchSize);
      try {
        await this.options.repository.append(batch);
      } catch (err) {
        const rest = records.slice(i);
        const room = Math.max(0, this.maxQueued - this.queue.length);
        this.droppedCount += Math.max(0, rest.length - room);
        this.queue = [...rest.slice(0, room), ...this.queue];
        this.options.log.warn({ err, kept: Math.min(room, rest.length) }, 'audit log write failed; retrying');
        if (!this.closed) {
          this.timer ??= setTimeout(() => {
            this.timer = undefined;
            void this.flush();
          }, 1000);
        }
        return;
      }
    }
  }

  /** Writes what is queued and stops; later records are forwarded but not stored. */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const forwarder of this.options.forwarders ?? []) await forwarder.close();
  }
}
