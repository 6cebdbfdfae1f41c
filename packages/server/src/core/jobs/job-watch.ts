import type { JobStatus } from '@svc/protocol';
import type { ClientEvents, OutputStream, Unsubscribe } from '../clients/client-events.js';

export type { OutputStream } from '../clients/client-events.js';

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

/** The gateway's job output, published as client events (`jobOutput`). */
export const jobOutputTo = (events: ClientEvents): JobOutputListener => ({
  wants: (jid) => events.followed('jobOutput', jid),
  chunk: (clientId, jid, stream, text) => events.publish('jobOutput', { clientId, jid, stream, text }),
});

/**
 * One owner's watched jobs, over the client events of each jid: live output chunks and the moment a result is
 * stored. A jid has one listener here (many jids may share one listener object); it is dropped when the job
 * finishes or its watcher stops watching, so nothing lives longer than the interest in it.
 */
export class JobWatch {
  private readonly watched = new Map<string, Unsubscribe>();

  constructor(private readonly events: ClientEvents) {}

  /** A separate watch over the same events, for an owner whose jids another watch may already follow. */
  another(): JobWatch {
    return new JobWatch(this.events);
  }

  /** Output of a job is passed on only when it came from the job's own client. */
  watch(jid: string, clientId: string, listener: JobListener): void {
    this.unwatch(jid);
    const output = this.events.subscribeTo('jobOutput', jid, (event) => {
      if (event.clientId === clientId) listener.chunk?.(jid, event.stream, event.text);
    });
    const finished = this.events.subscribeTo('jobFinished', jid, (event) => {
      this.unwatch(jid);
      listener.finished(jid, event.status);
    });
    this.watched.set(jid, () => {
      output();
      finished();
    });
  }

  unwatch(jid: string): void {
    const stop = this.watched.get(jid);
    if (!stop) return;
    this.watched.delete(jid);
    stop();
  }
}
