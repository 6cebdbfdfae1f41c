import type { JobEnd } from '@svc/protocol';
import { StreamRedactor, type JobStream, type SecretValue } from '@svc/platform';

export interface OutputPart {
  stream: JobStream;
  data: Buffer;
}

/** The end record without the truncation flags, which the output fills in. */
export type JobOutcome = Omit<JobEnd, 'stdout_truncated' | 'stderr_truncated'>;

/**
 * A job's result as the agent keeps it until svcd has stored it: stdout and stderr chunks in the order they were
 * produced, at most `limit` bytes per stream (the rest is dropped and the stream marked truncated), then the end
 * record. Nothing is added after the end, so a timed-out process's later output is discarded.
 */
export class JobOutput {
  readonly parts: OutputPart[] = [];
  private readonly kept = { stdout: 0, stderr: 0 };
  private readonly truncated = { stdout: false, stderr: false };
  private result: JobEnd | undefined;
  private waiters: (() => void)[] = [];
  private markEnded: (end: JobEnd) => void = () => undefined;
  /** Resolves with the end record once the result has ended. */
  readonly ended = new Promise<JobEnd>((resolve) => (this.markEnded = resolve));
  /** How often the result has been offered to svcd; every offer after the first is a replay. */
  offers = 0;
  /** Each stream's secret values are replaced before anything is kept, so no copy of one leaves the process. */
  private readonly redactors: Record<JobStream, StreamRedactor> | undefined;

  constructor(
    readonly jid: string,
    private readonly limit: number,
    secrets: readonly SecretValue[] = [],
  ) {
    this.redactors =
      secrets.length === 0
        ? undefined
        : { stdout: new StreamRedactor(secrets), stderr: new StreamRedactor(secrets) };
  }

  get end(): JobEnd | undefined {
    return this.result;
  }

  /** Bytes kept, both streams. */
  get bytes(): number {
    return this.kept.stdout + this.kept.stderr;
  }

  append(stream: JobStream, chunk: Buffer): void {
    if (this.result || chunk.length === 0) return;
    this.keep(stream, this.redactors ? this.redactors[stream].push(chunk) : chunk);
  }

  private keep(stream: JobStream, chunk: Buffer): void {
    if (chunk.length === 0) return;
    const room = this.limit - this.kept[stream];
    if (chunk.length > room) this.truncated[stream] = true;
    const data = chunk.length > room ? chunk.subarray(0, room) : chunk;
    if (data.length === 0) return;
    this.parts.push({ stream, data });
    this.kept[stream] += data.length;
    this.changed();
  }

  /** Ends the result; false (and no change) when it had already ended. */
  finish(outcome: JobOutcome): boolean {
    if (this.result) return false;
    if (this.redactors)
      for (const stream of ['stdout', 'stderr'] as const) this.keep(stream, this.redactors[stream].end());
    this.result = {
      ...outcome,
      stdout_truncated: this.truncated.stdout,
      stderr_truncated: this.truncated.stderr,
    };
    this.markEnded(this.result);
    this.changed();
    return true;
  }

  /** The first `max` bytes kept of one stream. */
  head(stream: JobStream, max: number): Buffer {
    const pieces: Buffer[] = [];
    let have = 0;
    for (const part of this.parts) {
      if (part.stream !== stream) continue;
      pieces.push(part.data.subarray(0, max - have));
      have += pieces.at(-1)?.length ?? 0;
      if (have >= max) break;
    }
    return Buffer.concat(pieces);
  }

  /** Calls `listener` once, at the next new chunk or at the end. */
  onceChanged(listener: () => void): void {
    this.waiters.push(listener);
  }

  private changed(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }
}
