import type { Job } from '@svc/protocol';
import type { Clock } from '../auth/ports.js';
import { BatchedMembership, CONNECTING_CLIENTS } from '../batched-membership.js';
import type { JobsService } from './jobs-service.js';
import type { JobRepository } from './ports.js';
import { Slots } from './slots.js';

/** job.run requests unanswered at once per client while its queued jobs are delivered. */
export const PER_CLIENT_DELIVERIES = 4;
/** ... and across all clients: a reconnect storm of thousands of clients never floods svcd or the database. */
export const GLOBAL_DELIVERIES = 128;
/** Queued job ids read per query. */
const PAGE = 64;

export interface JobQueueTuning {
  perClient?: number;
  global?: number;
}

/**
 * Jobs queued for clients that were not connected (queue_ttl, issue 27). When a client attaches its queued jobs
 * are claimed (queued → running, only before they expire) and sent, oldest first, at most PER_CLIENT_DELIVERIES
 * unanswered per client and GLOBAL_DELIVERIES overall, so a client with many queued jobs or a storm of
 * reconnecting clients gets them promptly without starving its link or the others. Expiry: the deadline sweep
 * (expireQueued, also at start) and a timer at the soonest expiry this process queued.
 */
export class JobQueue {
  private readonly draining = new Map<string, { again: boolean }>();
  private readonly global: Slots;
  private readonly perClient: number;
  private expiryTimer: NodeJS.Timeout | undefined;
  private expiryAt = Infinity;
  private closed = false;
  private readonly anyQueued: BatchedMembership;

  constructor(
    private readonly repository: JobRepository,
    private readonly jobs: Pick<JobsService, 'dispatchStored' | 'expireQueued'>,
    private readonly clock: Clock,
    tuning: JobQueueTuning = {},
    private readonly log?: { warn(obj: object, msg: string): void },
  ) {
    this.global = new Slots(tuning.global ?? GLOBAL_DELIVERIES);
    this.perClient = tuning.perClient ?? PER_CLIENT_DELIVERIES;
    this.anyQueued = new BatchedMembership(
      (clientIds) => repository.clientsWithQueued(clientIds, clock.now()),
      CONNECTING_CLIENTS,
    );
  }

  /** A job was queued for that client: it expires at its queue_expires_at, and runs if the client just came. */
  queued(clientId: string, job: Pick<Job, 'queue_expires_at'>, connectedNow?: () => boolean): void {
    if (job.queue_expires_at) this.expireAt(Date.parse(job.queue_expires_at));
    if (connectedNow?.()) this.deliver(clientId, { justQueued: true });
  }

  /**
   * The client connected (or, `justQueued`, got a job queued while connected): sends its queued jobs (a drain
   * already under way reads the queue once more).
   */
  deliver(clientId: string, { justQueued = false } = {}): void {
    if (this.closed) return;
    const current = this.draining.get(clientId);
    if (current) {
      current.again = true;
      return;
    }
    const state = { again: false, ask: !justQueued };
    this.draining.set(clientId, state);
    void this.drain(clientId, state)
      .catch((err: unknown) =>
        this.log?.warn(
          { err, client_id: clientId },
          'delivering queued jobs failed; they wait for the next connect',
        ),
      )
      .finally(() => this.draining.delete(clientId));
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.expiryTimer);
  }

  private async drain(clientId: string, state: { again: boolean; ask: boolean }): Promise<void> {
    const mine = new Slots(this.perClient);
    const sending = new Set<Promise<unknown>>();
    for (;;) {
      state.again = false;
      // A client that just connected nearly always has nothing queued: asked with the others connecting meanwhile.
      if (state.ask) {
        state.ask = false;
        if (!(await this.anyQueued.has(clientId)) && !state.again) return;
      }
      const jids = await this.repository.queuedFor(clientId, this.clock.now(), PAGE);
      for (const jid of jids) {
        if (this.closed) break;
        await mine.take();
        await this.global.take();
        const release = () => {
          this.global.release();
          mine.release();
        };
        const sent = this.send(clientId, jid, release).finally(() => sending.delete(sent));
        sending.add(sent);
      }
      await mine.idle();
      await Promise.all(sending);
      if (this.closed || (jids.length < PAGE && !state.again)) return;
    }
  }

  /** Claims one queued job and sends it; `release` frees its slots once the agent answered (or never will). */
  private async send(clientId: string, jid: string, release: () => void): Promise<void> {
    let released = false;
    const once = () => {
      if (!released) release();
      released = true;
    };
    try {
      const run = await this.repository.claimQueued(clientId, jid, this.clock.now());
      if (!run) return;
      await this.jobs.dispatchStored({ client_id: clientId, jid }, run, once);
    } finally {
      once();
    }
  }

  private expireAt(at: number): void {
    if (this.closed || at >= this.expiryAt) return;
    clearTimeout(this.expiryTimer);
    this.expiryAt = at;
    this.expiryTimer = setTimeout(
      () => {
        this.expiryAt = Infinity;
        this.jobs
          .expireQueued()
          .catch((err: unknown) => this.log?.warn({ err }, 'expiring queued jobs failed; the sweep retries'));
      },
      Math.max(0, at - this.clock.now().getTime()) + 50,
    );
    this.expiryTimer.unref();
  }
}
