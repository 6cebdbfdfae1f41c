import type { JobStatus } from '@svc/protocol';

export type OutputStream = 'stdout' | 'stderr';

/** Someone interested in the life of certain jobs (a sequential runner, a WebSocket session). */
export interface JobListener {
  /** Output text as it arrives from the agent. */
  chunk?(jid: string, stream: OutputStream, text: string): void;
  /** The job's result was stored with this status. */
  finished(jid: string, status: JobStatus): void;
}

/** Where the gateway reports live output; `wants` lets it skip decoding output nobody watches. */
export interface JobOutputListener {
  wants(jid: string): boolean;
  chunk(clientId: string, jid: string, stream: OutputStream, text: string): void;
}

/**
 * In-process notifications by job id: live output chunks and the moment a result is stored. A listener is
 * registered per watched jid (many jids may share one listener object) and dropped when the job finishes or
 * its watcher stops watching, so nothing lives longer than the interest in it.
 */
export class JobWatch implements JobOutputListener {
  private readonly watched = new Map<string, { clientId: string; listener: JobListener }>();

  watch(jid: string, clientId: string, listener: JobListener): void {
    this.watched.set(jid, { clientId, listener });
  }

  unwatch(jid: string): void {
    this.watched.delete(jid);
  }

  wants(jid: string): boolean {
    return this.watched.has(jid);
  }

  /** Output of a job is passed on only when it came from the job's own client. */
  chunk(clientId: string, jid: string, stream: OutputStream, text: string): void {
    const entry = this.watched.get(jid);
    if (entry?.clientId === clientId) entry.listener.chunk?.(jid, stream, text);
  }

  finished(jid: string, status: JobStatus): void {
    const entry = this.watched.get(jid);
    if (!entry) return;
    this.watched.delete(jid);
    entry.listener.finished(jid, status);
  }
}
