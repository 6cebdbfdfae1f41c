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

interface Waiter {
  grant: (release: () => void) => void;
  refuse: (err: HandshakeRefused) => void;
}

/**
 * Admits at most `concurrent` agent handshakes (WebSocket upgrade + SSH key exchange + login) at once, so a storm
 * of reconnecting agents cannot starve the API; the rest wait in a bounded FIFO queue.
 */
export class HandshakeLimiter {
  private running = 0;
  private closed = false;
  private readonly queue: Waiter[] = [];

  constructor(private readonly limits: HandshakeLimits) {}

  get active(): number {
    return this.running;
  }

  get waiting(): number {
    return this.queue.length;
  }

  /** Resolves with the release function of a slot; rejects with HandshakeRefused. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (this.closed) return Promise.reject(new HandshakeRefused('closed'));
    if (this.running < this.limits.concurrent) return Promise.resolve(this.take());
    if (this.queue.length >= this.limits.queueLimit)
      return Promise.reject(new HandshakeRefused('queue_full'));
    return new Promise((resolve, reject) => {
      const leave = (err: HandshakeRefused) => {
        const at = this.queue.indexOf(waiter);
        if (at >= 0) this.queue.splice(at, 1);
        settle();
        reject(err);
      };
      const onAbort = () => leave(new HandshakeRefused('aborted'));
      const timer = setTimeout(() => leave(new HandshakeRefused('queue_timeout')), this.limits.queueWaitMs);
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const waiter: Waiter = {
        grant: (release) => {
          settle();
          resolve(release);
        },
        refuse: leave,
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
    });
  }

  /** Refuses every waiting and future handshake. */
  close(): void {
    this.closed = true;
    for (const waiter of [...this.queue]) waiter.refuse(new HandshakeRefused('closed'));
  }

  private take(): () => void {
    this.running += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running -= 1;
      const next = this.queue.shift();
      if (next) next.grant(this.take());
    };
  }
}
