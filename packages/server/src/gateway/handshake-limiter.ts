import { waitInQueue, type QueuedWait } from './queued-wait.js';

/** Why a handshake was not admitted. */
export class HandshakeRefused extends Error {
  constructor(readonly reason: 'queue_full' | 'queue_timeout' | 'aborted' | 'closed') {
    super(`handshake refused: ${reason}`);
    this.name = 'HandshakeRefused';
  }
}

export interface HandshakeLimits {
  /** Handshakes running at once. */
  concurrent: number;
  /** Handshakes waiting for a slot; beyond this they are refused at once. */
  queueLimit: number;
  /** Longest wait for a slot. */
  queueWaitMs: number;
}

/** The queue key of handshakes under way; no address looks like it. */
const RESUMING = '\0resuming';

type Waiter = QueuedWait<() => void>;

/**
 * Admits at most `concurrent` agent handshakes (WebSocket upgrade + SSH key exchange + login) at once, so a storm
 * of reconnecting agents cannot starve the API; the rest wait in a bounded queue. Waiters are served by address in
 * turn (first come, first served within an address), so many connections from one address do not keep an agent
 * at another waiting behind all of them.
 */
export class HandshakeLimiter {
  private running = 0;
  private closed = false;
  private queued = 0;
  /** Waiters by address; the Map's order is the turn order, an address moves to the back once served. */
  private readonly queues = new Map<string, Waiter[]>();

  constructor(private readonly limits: HandshakeLimits) {}

  get active(): number {
    return this.running;
  }

  get waiting(): number {
    return this.queued;
  }

  /**
   * Resolves with the release function of a slot; rejects with HandshakeRefused. A handshake already under way
   * that gave its slot back while it waited for its peer (`resuming`) goes before those not yet started, so that
   * handshakes finish in the order they began and within their deadline.
   */
  acquire(signal?: AbortSignal, address = '', resuming = false): Promise<() => void> {
    if (this.closed) return Promise.reject(new HandshakeRefused('closed'));
    if (this.running < this.limits.concurrent) return Promise.resolve(this.take());
    if (!resuming && this.queued >= this.limits.queueLimit)
      return Promise.reject(new HandshakeRefused('queue_full'));
    if (resuming) address = RESUMING;
    return waitInQueue<() => void>({
      signal,
      aborted: () => new HandshakeRefused('aborted'),
      timer: { ms: this.limits.queueWaitMs, error: () => new HandshakeRefused('queue_timeout') },
      enter: (waiter) => {
        const queue = this.queues.get(address);
        if (queue) queue.push(waiter);
        else this.queues.set(address, [waiter]);
        this.queued += 1;
      },
      exit: (waiter) => this.remove(address, waiter),
    });
  }

  /** Refuses every waiting and future handshake. */
  close(): void {
    this.closed = true;
    for (const queue of [...this.queues.values()])
      for (const waiter of [...queue]) waiter.leave(() => new HandshakeRefused('closed'));
  }

  private remove(address: string, waiter: Waiter): void {
    const queue = this.queues.get(address);
    const at = queue?.indexOf(waiter) ?? -1;
    if (!queue || at < 0) return;
    queue.splice(at, 1);
    this.queued -= 1;
    if (queue.length === 0) this.queues.delete(address);
  }

  /** The first handshake resuming, else the first waiter of the address whose turn it is (it then goes last). */
  private next(): Waiter | undefined {
    const resuming = this.queues.get(RESUMING);
    const [address, queue] = resuming ? [RESUMING, resuming] : (this.queues.entries().next().value ?? []);
    if (address === undefined || !queue) return undefined;
    const waiter = queue.shift();
    this.queued -= 1;
    this.queues.delete(address);
    if (queue.length > 0) this.queues.set(address, queue);
    return waiter;
  }

  private take(): () => void {
    this.running += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running -= 1;
      const next = this.next();
      if (next) next.grant(this.take());
    };
  }
}
