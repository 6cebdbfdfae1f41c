import { waitInQueue, type QueuedWait } from './queued-wait.js';

export interface HandshakeAdmissionLimits {
  /** Handshakes under way at once, from the upgrade to the login; past it agents wait or are told when to come back. */
  maxUnderWay: number;
  /** The longest Retry-After handed out, in seconds. */
  maxRetryAfterS: number;
  /** Upgrades wait for a place while it should come within this long at the measured rate; the rest are refused. */
  queueSeconds: number;
  /** The longest an upgrade waits for a place before it is refused after all (below the agents' 30 s). */
  maxWaitMs: number;
  /** Upgrades of agents that wait patiently (see `acquire`) kept waiting at once at most; the rest are refused. */
  maxPatient: number;
  /** How often a patient upgrade is told it still waits (well within the agent's deadline, which it restarts). */
  stillWaitingMs: number;
}

/** One admitted handshake; end it once, at the login or when its connection closes before. */
export interface HandshakeTicket {
  end(loggedIn: boolean): void;
}

/** No place now nor soon: the agent is told when to come back. */
export class AdmissionRefused extends Error {
  constructor(
    readonly retryAfterS: number,
    readonly underWay: number,
  ) {
    super(
      `${underWay} agent handshake${underWay === 1 ? ' is' : 's are'} under way; come back in ${retryAfterS} s`,
    );
    this.name = 'AdmissionRefused';
  }
}

/** The wait was called off (the connection closed). */
export class AdmissionAborted extends Error {
  constructor() {
    super('the upgrade was given up while it waited for a place');
    this.name = 'AdmissionAborted';
  }
}

interface Waiter {
  /** Its place in the order of arrival, for the count of those before it. */
  seq: number;
  /** It waits however long the queue (see `acquire`). */
  patient: boolean;
  wait: QueuedWait<HandshakeTicket>;
}

/** Logins per second are measured over windows this long. */
const RATE_WINDOW_MS = 1000;
/** Weight of the newest second in the smoothed rate. */
const RATE_WEIGHT = 0.5;
/**
 * Until logins are measured, and as a floor after, the rate assumed is this many seconds per place. Optimistic on
 * purpose: an agent told to come back too soon is refused again, which costs a connection; one told too late leaves
 * places empty (4 s per place made a single node's reconnect storm of 5,000 agents take 76 s instead of 51). With
 * 1 s per place and waits of 20–25 s, thousands of agents timed out waiting in the cluster bench.
 */
const SECONDS_PER_PLACE = 2;

/**
 * Bounds the agent handshakes under way; upgrades beyond wait for a place while one should come soon, and the
 * rest are told when to come back.
 *
 * In a storm (a dead node's agents moving to the others, every agent after a restart) every handshake that has
 * begun advances a step at a time with all the others, on svcd and on the agents' side alike, so none finishes
 * until nearly all do. Those that pass an agent's deadline waste their work on both ends and come back later
 * with more; on a slow machine the storm collapsed so that hardly any finished (cluster bench, 2026-11-29:
 * ~8,000 under way on two nodes, 107 of 10,000 agents through after 90 s). Past `maxUnderWay` an upgrade waits
 * (costing a socket, no CPU) as long as the places before it should free within `queueSeconds` at the measured
 * login rate. Past that it is answered 503 with a Retry-After spread by that rate: agents refused one after
 * another are promised consecutive places after the queue, so each comes back about when one is free.
 *
 * An agent that takes word that it still waits (svc says so with its upgrade) waits for its turn instead, however
 * long the queue: no place is left empty while agents wait for their promised time, and none is refused again for
 * coming back too soon (in the cluster bench's failover the promises made 21,000 refusals for 10,000 agents, a
 * quarter of a survivor's CPU in the first seconds).
 */
export class HandshakeAdmission {
  private underWay = 0;
  private readonly waiters: Waiter[] = [];
  /** Sequence numbers of the last waiter queued and the last one granted a place. */
  private queuedSeq = 0;
  private grantedSeq = 0;
  private patient = 0;
  /** When the places promised so far are used up (ms, the clock's scale). */
  private promisedUntil = 0;
  private measuredRate: number | undefined;
  private windowStart: number;
  private windowLogins = 0;

  constructor(
    private readonly limits: HandshakeAdmissionLimits,
    private readonly now: () => number = Date.now,
  ) {
    if (!(limits.maxUnderWay >= 1)) throw new RangeError('maxUnderWay must be at least 1');
    this.windowStart = now();
  }

  /** Handshakes admitted and neither logged in nor closed. */
  get active(): number {
    return this.underWay;
  }

  /** Upgrades waiting for a place. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** Logins per second as last measured (smoothed), or undefined before the first full window. */
  get loginRate(): number | undefined {
    return this.measuredRate;
  }

  /**
   * Resolves with a ticket once there is a place; rejects with AdmissionRefused or AdmissionAborted. An agent that
   * takes word that it still waits (`stillWaiting`, called every `stillWaitingMs` with about how many wait before
   * it) waits for its turn however long the queue, up to `maxPatient` such waiters; the others wait only while a
   * place should come within `queueSeconds`, and `maxWaitMs` at most.
   */
  acquire(signal?: AbortSignal, stillWaiting?: (ahead: number) => void): Promise<HandshakeTicket> {
    if (signal?.aborted) return Promise.reject(new AdmissionAborted());
    if (this.underWay < this.limits.maxUnderWay) {
      this.underWay += 1;
      return Promise.resolve(this.ticket());
    }
    const rate = this.assumedRate();
    const waits = stillWaiting
      ? this.patient < this.limits.maxPatient
      : this.waiters.length < rate * this.limits.queueSeconds;
    if (!waits) return Promise.reject(this.refusal(rate));
    const refused = () => this.refusal(this.assumedRate());
    let waiter: Waiter | undefined;
    return waitInQueue<HandshakeTicket>({
      signal,
      aborted: () => new AdmissionAborted(),
      timer: stillWaiting
        ? {
            everyMs: this.limits.stillWaitingMs,
            tick: () => stillWaiting(Math.max(0, (waiter?.seq ?? 0) - this.grantedSeq - 1)),
          }
        : { ms: this.limits.maxWaitMs, error: refused },
      enter: (wait) => {
        waiter = { seq: ++this.queuedSeq, patient: stillWaiting !== undefined, wait };
        if (waiter.patient) this.patient += 1;
        this.waiters.push(waiter);
      },
      exit: () => waiter && this.remove(waiter),
    });
  }

  /** Refuses the waiting upgrades (the listener stops taking agents): they come back in a second, elsewhere. */
  close(): void {
    for (const waiter of [...this.waiters]) waiter.wait.leave(() => new AdmissionRefused(1, this.underWay));
  }

  /** Takes a waiter out of the queue, if it is still in it. */
  private remove(waiter: Waiter): void {
    const at = this.waiters.indexOf(waiter);
    if (at < 0) return;
    this.waiters.splice(at, 1);
    if (waiter.patient) this.patient -= 1;
  }

  /** The next promised place after the waiting upgrades, as a Retry-After. */
  private refusal(rate: number): AdmissionRefused {
    const now = this.now();
    const perPlaceMs = 1000 / rate;
    const afterQueue = now + this.waiters.length * perPlaceMs;
    const latest = now + this.limits.maxRetryAfterS * 1000;
    this.promisedUntil = Math.min(Math.max(this.promisedUntil, afterQueue) + perPlaceMs, latest);
    const retryAfterS = Math.max(1, Math.ceil((this.promisedUntil - now) / 1000));
    return new AdmissionRefused(retryAfterS, this.underWay);
  }

  private assumedRate(): number {
    return Math.max(this.rate(this.now()), this.limits.maxUnderWay / SECONDS_PER_PLACE);
  }

  private ticket(): HandshakeTicket {
    let ended = false;
    return {
      end: (loggedIn) => {
        if (ended) return;
        ended = true;
        if (loggedIn) {
          this.rate(this.now());
          this.windowLogins += 1;
        }
        const next = this.waiters[0];
        // The place passes to the first waiter: under way stays as it was.
        if (next) {
          this.remove(next);
          this.grantedSeq = next.seq;
          next.wait.grant(this.ticket());
        } else this.underWay -= 1;
      },
    };
  }

  /** Folds the windows that have ended into the smoothed rate; a window without logins counts as zero. */
  private rate(now: number): number {
    const elapsed = now - this.windowStart;
    if (elapsed >= RATE_WINDOW_MS) {
      const latest = (this.windowLogins * 1000) / elapsed;
      // A longer window weighs as much as that many windows of one second would.
      const weight = 1 - (1 - RATE_WEIGHT) ** (elapsed / RATE_WINDOW_MS);
      this.measuredRate =
        this.measuredRate === undefined ? latest : weight * latest + (1 - weight) * this.measuredRate;
      this.windowStart = now;
      this.windowLogins = 0;
    }
    return this.measuredRate ?? 0;
  }
}
