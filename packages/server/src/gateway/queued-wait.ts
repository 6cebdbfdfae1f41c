/** One waiter of a queue, as its queue holds it. */
export interface QueuedWait<T> {
  /** Resolves the wait (the waiter is out of the queue already). */
  grant(value: T): void;
  /** Takes the waiter out of the queue and rejects the wait with the error made then. */
  leave(error: () => Error): void;
}

export interface QueuedWaitOptions<T> {
  signal?: AbortSignal | undefined;
  /** The error of a wait called off by the signal. */
  aborted: () => Error;
  /** Left with `error` after `ms`; or told every `everyMs` that it still waits, however long. */
  timer: { ms: number; error: () => Error } | { everyMs: number; tick: () => void };
  /** Puts the waiter in the queue. */
  enter(wait: QueuedWait<T>): void;
  /** Takes it out again (it left before its turn); nothing if it is out already. */
  exit(wait: QueuedWait<T>): void;
}

/**
 * A wait in a caller's queue that resolves when the queue grants it, and rejects when the signal aborts, when its
 * time is up, or when the queue refuses it. Errors are made once the waiter is out of the queue, so what they say
 * about the queue does not count it.
 */
export function waitInQueue<T>(options: QueuedWaitOptions<T>): Promise<T> {
  const { signal, timer } = options;
  return new Promise<T>((resolve, reject) => {
    const settle = () => {
      clearTimeout(handle);
      signal?.removeEventListener('abort', onAbort);
    };
    const wait: QueuedWait<T> = {
      grant: (value) => {
        settle();
        resolve(value);
      },
      leave: (error) => {
        options.exit(wait);
        settle();
        reject(error());
      },
    };
    const onAbort = () => wait.leave(options.aborted);
    const handle =
      'everyMs' in timer
        ? setInterval(timer.tick, timer.everyMs)
        : setTimeout(() => wait.leave(timer.error), timer.ms);
    signal?.addEventListener('abort', onAbort, { once: true });
    options.enter(wait);
  });
}
