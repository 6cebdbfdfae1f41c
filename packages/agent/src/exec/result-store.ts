import type { JobOutput } from './job-output.js';

export interface ResultStoreLimits {
  maxResults: number;
  maxBytes: number;
}

export const DEFAULT_RESULT_LIMITS: ResultStoreLimits = { maxResults: 64, maxBytes: 256 * 1024 * 1024 };

/**
 * Job results svcd has not acknowledged yet, oldest first. When there are more than `maxResults` or they hold
 * more than `maxBytes`, the oldest finished results are dropped (a running job's result is never dropped: it is
 * bounded by send_back_limit and is still being produced).
 */
export class ResultStore {
  private readonly results = new Map<string, JobOutput>();

  constructor(
    private readonly limits: ResultStoreLimits = DEFAULT_RESULT_LIMITS,
    private readonly onDrop: (output: JobOutput, reason: string) => void = () => undefined,
  ) {}

  has(jid: string): boolean {
    return this.results.has(jid);
  }

  get size(): number {
    return this.results.size;
  }

  /** Every kept result, oldest first. */
  all(): JobOutput[] {
    return [...this.results.values()];
  }

  add(output: JobOutput): void {
    this.results.set(output.jid, output);
    this.enforceLimits();
  }

  /** svcd stored it. */
  remove(jid: string): void {
    this.results.delete(jid);
  }

  /** Drops the oldest finished results until the limits hold again. */
  enforceLimits(): void {
    let bytes = 0;
    for (const output of this.results.values()) bytes += output.bytes;
    for (const output of this.results.values()) {
      const tooMany = this.results.size > this.limits.maxResults;
      const tooBig = bytes > this.limits.maxBytes;
      if (!tooMany && !tooBig) return;
      if (!output.end) continue;
      this.results.delete(output.jid);
      bytes -= output.bytes;
      this.onDrop(
        output,
        tooMany
          ? `more than ${this.limits.maxResults} results are waiting for svcd`
          : `the results waiting for svcd hold more than ${this.limits.maxBytes} bytes`,
      );
    }
  }
}
