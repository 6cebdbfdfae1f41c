export interface BatchedMembershipOptions {
  /** How long the first key of a batch waits for others. */
  windowMs: number;
  /** Keys per lookup at most; a full batch goes at once. */
  maxKeys: number;
}

/**
 * For what every connecting client is asked (queued jobs, stored tunnels): the clients connecting within 50 ms, at
 * most 500 to an IN list.
 */
export const CONNECTING_CLIENTS: BatchedMembershipOptions = { windowMs: 50, maxKeys: 500 };

interface Caller {
  resolve: (found: boolean) => void;
  reject: (err: unknown) => void;
}

/**
 * Answers "is this key in the set?" for many callers with one lookup: the keys asked within `windowMs` of the
 * first go to `lookUp` together. Every agent connection asks the database whether it has jobs queued and tunnels
 * stored, nearly always to hear no; in a reconnect storm one query each per agent is a round trip and a system call
 * per agent on the node and work for the database. The answer is as of the lookup, never older than the question.
 */
export class BatchedMembership {
  private waiting = new Map<string, Caller[]>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly lookUp: (keys: string[]) => Promise<ReadonlySet<string>>,
    private readonly options: BatchedMembershipOptions,
  ) {}

  has(key: string): Promise<boolean> {
    return new Promise((resolve, reject) => {
      const callers = this.waiting.get(key);
      if (callers) callers.push({ resolve, reject });
      else this.waiting.set(key, [{ resolve, reject }]);
      if (this.waiting.size >= this.options.maxKeys) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.options.windowMs);
    });
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.waiting;
    this.waiting = new Map();
    if (batch.size === 0) return;
    this.lookUp([...batch.keys()]).then(
      (found) => {
        for (const [key, callers] of batch) for (const caller of callers) caller.resolve(found.has(key));
      },
      (err: unknown) => {
        for (const callers of batch.values()) for (const caller of callers) caller.reject(err);
      },
    );
  }
}
