import {
  eventKey,
  type ClientEventHandler,
  type ClientEventMap,
  type ClientEventType,
  type ClientEvents,
  type KeyedEventType,
  type Unsubscribe,
} from './client-events.js';

interface Subscription {
  /** Order of subscription: one made while an event is delivered does not get that event. */
  readonly seq: number;
  readonly handler: (event: never) => void;
}

type Queued = { type: ClientEventType; event: ClientEventMap[ClientEventType] };

/**
 * Client events within one process. Each event goes first to the handlers of its whole type, then to those of its
 * key, each group in subscription order. Events published while one is delivered wait in a queue, so every
 * handler sees the same order; a handler that throws does not keep the event from the others (the first error is
 * thrown to the publisher once the queue is empty).
 */
export class LocalClientEvents implements ClientEvents {
  private readonly all = new Map<ClientEventType, Set<Subscription>>();
  private readonly keyed = new Map<ClientEventType, Map<string, Set<Subscription>>>();
  private readonly queue: Queued[] = [];
  private delivering = false;
  private nextSeq = 0;

  publish<T extends ClientEventType>(type: T, event: ClientEventMap[T]): void {
    this.queue.push({ type, event });
    if (this.delivering) return;
    this.delivering = true;
    let failure: { err: unknown } | undefined;
    try {
      for (let at = 0; at < this.queue.length; at += 1) {
        const next = this.queue[at] as Queued;
        const error = this.deliver(next.type, next.event);
        if (error && !failure) failure = error;
      }
    } finally {
      this.queue.length = 0;
      this.delivering = false;
    }
    if (failure) throw failure.err;
  }

  subscribe<T extends ClientEventType>(type: T, handler: ClientEventHandler<T>): Unsubscribe {
    let set = this.all.get(type);
    if (!set) this.all.set(type, (set = new Set<Subscription>()));
    return this.add(set, handler, () => undefined);
  }

  subscribeTo<T extends KeyedEventType>(type: T, key: string, handler: ClientEventHandler<T>): Unsubscribe {
    let byKey = this.keyed.get(type);
    if (!byKey) this.keyed.set(type, (byKey = new Map<string, Set<Subscription>>()));
    let set = byKey.get(key);
    if (!set) byKey.set(key, (set = new Set<Subscription>()));
    const owner = byKey;
    const subscribers = set;
    return this.add(set, handler, () => {
      if (subscribers.size === 0 && owner.get(key) === subscribers) owner.delete(key);
    });
  }

  followed(type: KeyedEventType, key: string): boolean {
    return (this.keyed.get(type)?.get(key)?.size ?? 0) > 0;
  }

  private add<T extends ClientEventType>(
    set: Set<Subscription>,
    handler: ClientEventHandler<T>,
    emptied: () => void,
  ): Unsubscribe {
    const subscription: Subscription = { seq: this.nextSeq++, handler };
    set.add(subscription);
    return () => {
      if (set.delete(subscription)) emptied();
    };
  }

  /** Delivers one event; returns the first handler error. */
  private deliver(
    type: ClientEventType,
    event: ClientEventMap[ClientEventType],
  ): { err: unknown } | undefined {
    // Handlers subscribed from now on have a higher seq and wait for the next event.
    const last = this.nextSeq;
    let failure = this.call(this.all.get(type), event, last);
    const key = eventKey(type, event);
    if (key !== undefined) {
      const error = this.call(this.keyed.get(type)?.get(key), event, last);
      failure ??= error;
    }
    return failure;
  }

  private call(
    set: Set<Subscription> | undefined,
    event: ClientEventMap[ClientEventType],
    last: number,
  ): { err: unknown } | undefined {
    if (!set || set.size === 0) return undefined;
    let failure: { err: unknown } | undefined;
    // A Set visits entries added during the loop and skips deleted ones: unsubscribing takes effect at once.
    for (const subscription of set) {
      if (subscription.seq >= last) continue;
      try {
        (subscription.handler as (event: ClientEventMap[ClientEventType]) => void)(event);
      } catch (err) {
        failure ??= { err };
      }
    }
    return failure;
  }
}
