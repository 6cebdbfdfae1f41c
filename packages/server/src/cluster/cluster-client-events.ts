import type { NatsConnection, Subscription } from 'nats';
import type {
  ClientEventHandler,
  ClientEventMap,
  ClientEventType,
  ClientEvents,
  KeyedEventType,
  Unsubscribe,
} from '../core/clients/client-events.js';
import { LocalClientEvents } from '../core/clients/local-client-events.js';
import type { ClientsLog } from '../core/clients/ports.js';
import { decodeJson, encodeJson } from './dispatch-wire.js';

/** `jobFinished` on this subject comes from a node of an earlier version (one message per job). */
type JobEvent =
  | { origin: string; type: 'jobOutput'; event: ClientEventMap['jobOutput'] }
  | { origin: string; type: 'jobFinished'; event: ClientEventMap['jobFinished'] };

/** The jobs that ended on a node within one turn of its event loop, sent together. */
interface JobsFinished {
  origin: string;
  events: ClientEventMap['jobFinished'][];
}

/** Job ends sent in one message at most. */
const MAX_FINISHED_PER_MESSAGE = 4_000;

interface Follow {
  origin: string;
  jid: string;
  delta: 1 | -1;
}

/**
 * Client events of a cluster node: in process as on a single node, and job events carried between nodes, since
 * a job's result arrives on the node holding its client while the run waiting for it, or the /ws/commands socket
 * showing it, may be on another. `jobFinished` goes to every node, batched per turn of the event loop; `jobOutput`
 * only while some node follows that job (a node following one says so to the others, so output nobody watches is
 * still never decoded).
 */
export class ClusterClientEvents implements ClientEvents {
  private readonly local = new LocalClientEvents();
  /** Job ids other nodes follow the output of, with how many followers. */
  private readonly remoteFollows = new Map<string, number>();
  private readonly subscriptions: Subscription[] = [];
  /** Job ends not sent to the other nodes yet (see finishedSoon). */
  private readonly finished: ClientEventMap['jobFinished'][] = [];

  constructor(
    private readonly nc: NatsConnection,
    private readonly prefix: string,
    private readonly nodeId: string,
    private readonly log: ClientsLog,
  ) {}

  start(): void {
    const subject = (name: string) => `${this.prefix}.events.${name}`;
    // One subscription for every kind, so that a job's output and its end are handled in the order sent.
    this.listen(`${this.prefix}.events.*`, {
      [subject('jobs')]: (message: JobEvent) => {
        if (message.type === 'jobOutput') this.local.publish('jobOutput', message.event);
        else this.local.publish('jobFinished', message.event);
      },
      [subject('finished')]: (message: JobsFinished) => {
        for (const event of message.events) this.local.publish('jobFinished', event);
      },
      [subject('follow')]: ({ jid, delta }: Follow) => {
        const count = (this.remoteFollows.get(jid) ?? 0) + delta;
        if (count > 0) this.remoteFollows.set(jid, count);
        else this.remoteFollows.delete(jid);
      },
    });
  }

  close(): void {
    for (const subscription of this.subscriptions) subscription.unsubscribe();
  }

  publish<T extends ClientEventType>(type: T, event: ClientEventMap[T]): void {
    if (type === 'jobFinished') this.finishedSoon(event as ClientEventMap['jobFinished']);
    else if (type === 'jobOutput' && this.remoteFollows.has((event as ClientEventMap['jobOutput']).jid))
      this.send(`${this.prefix}.events.jobs`, {
        origin: this.nodeId,
        type: 'jobOutput',
        event: event as ClientEventMap['jobOutput'],
      });
    this.local.publish(type, event);
  }

  /**
   * Every node learns of every job's end, but a fan-out ends thousands in a moment: those of one turn of the event
   * loop go out as one message, so each node decodes one message per batch instead of one per job.
   */
  private finishedSoon(event: ClientEventMap['jobFinished']): void {
    if (this.finished.length === 0) setImmediate(this.sendFinished);
    this.finished.push(event);
    // Far below NATS's max_payload (1 MiB by default) at ~60 bytes per job.
    if (this.finished.length >= MAX_FINISHED_PER_MESSAGE) this.sendFinished();
  }

  private readonly sendFinished = (): void => {
    if (this.finished.length === 0) return;
    const events = this.finished.splice(0);
    this.send(`${this.prefix}.events.finished`, { origin: this.nodeId, events });
  };

  subscribe<T extends ClientEventType>(type: T, handler: ClientEventHandler<T>): Unsubscribe {
    return this.local.subscribe(type, handler);
  }

  subscribeTo<T extends KeyedEventType>(type: T, key: string, handler: ClientEventHandler<T>): Unsubscribe {
    const unsubscribe = this.local.subscribeTo(type, key, handler);
    if (type !== 'jobOutput') return unsubscribe;
    this.send(`${this.prefix}.events.follow`, { origin: this.nodeId, jid: key, delta: 1 });
    let done = false;
    return () => {
      unsubscribe();
      if (done) return;
      done = true;
      this.send(`${this.prefix}.events.follow`, { origin: this.nodeId, jid: key, delta: -1 });
    };
  }

  followed(type: KeyedEventType, key: string): boolean {
    return this.local.followed(type, key) || (type === 'jobOutput' && this.remoteFollows.has(key));
  }

  private send(subject: string, message: JobEvent | JobsFinished | Follow): void {
    try {
      this.nc.publish(subject, encodeJson(message));
    } catch (err) {
      this.log.warn({ err, subject }, 'publishing a cluster event failed');
    }
  }

  /** Messages of other nodes on the subjects, each to its handler (this node's own are delivered in process). */
  private listen(pattern: string, handlers: Record<string, ((message: never) => void) | undefined>): void {
    const subscription = this.nc.subscribe(pattern);
    this.subscriptions.push(subscription);
    void (async () => {
      for await (const raw of subscription) {
        const handle = handlers[raw.subject] as ((message: { origin: string }) => void) | undefined;
        if (!handle) continue;
        try {
          const message = decodeJson<{ origin: string }>(raw.data);
          if (message.origin !== this.nodeId) handle(message);
        } catch (err) {
          this.log.warn({ err, subject: raw.subject }, 'a cluster event could not be handled');
        }
      }
    })();
  }
}
