import type { Job, ListQuery } from '@svc/protocol';
import type { JobWatch, OutputStream } from './job-watch.js';
import type { ChildRef } from './multi-job-runner.js';
import type { MultiJobsService, RunScope } from './multi-jobs-service.js';
import type { JobRepository } from './ports.js';

/** How often a followed run is read for children it has reached since (their results arrive as events). */
export const FOLLOW_POLL_MS = 500;
/** Children read per query while catching up with a run. */
const FOLLOW_PAGE = 500;

const OPEN_STATUSES = new Set<string>(['running', 'queued']);

/** Someone following a run or a job that was started elsewhere (a WebSocket session). */
export interface FollowObserver {
  /** Live output; a child first seen running gets one empty chunk, so it can be shown before its output. */
  chunk(child: ChildRef, stream: OutputStream, text: string): void;
  /** A child's (or the job's) final record, once per child. */
  final(job: Job): void;
  /** Every target has its final record: nothing more will come. */
  done(): void;
}

export interface RunFollowDeps {
  jobs: JobRepository;
  multi: Pick<MultiJobsService, 'get' | 'assertVisible'>;
  /** A watch of the follower's own (a jid has one listener per watch). */
  watch: JobWatch;
  pollMs?: number;
  /** The follower's client scope: a job of a client outside it, or a run reaching one, is answered 404. */
  scope?: RunScope;
  log: { warn(obj: object, msg: string): void };
}

const byCreation = (offset: number, limit: number): ListQuery => ({
  sort: [
    { field: 'created_at', direction: 'asc' },
    { field: 'client_id', direction: 'asc' },
  ],
  filters: [],
  page: { offset, limit },
});

/**
 * Follows a multi-client run, or one job, that is already running: every child already finished is sent as its
 * final record at once; the others are watched (live output, then their final record). A run's children are
 * created as it reaches its clients, always later than the ones before, so those not yet seen are read by offset
 * every FOLLOW_POLL_MS; the follow ends when the run has ended and every child has been sent.
 */
export class RunFollow {
  private readonly sent = new Set<string>();
  /** Children watched until their final record, by jid. */
  private readonly open = new Map<string, ChildRef>();
  private seen = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Following one job: it ends with that job's final record. */
  private single = false;

  constructor(
    private readonly deps: RunFollowDeps,
    private readonly observer: FollowObserver,
  ) {}

  /** Starts following `jid`: a job (of one client), else a multi-client run; rejects with the run's 404. */
  async start(jid: string): Promise<void> {
    const single = await this.deps.jobs.getById(jid);
    const { scope } = this.deps;
    if (single && (!scope?.limited || scope.has(single.client_id))) {
      this.single = true;
      return this.followJob(single);
    }
    // A job outside the scope is answered as the unknown run its jid is not.
    await this.deps.multi.assertVisible(jid, scope);
    await this.deps.multi.get(jid, false, false); // 404 for an unknown jid
    await this.poll(jid);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const jid of this.open.keys()) this.deps.watch.unwatch(jid);
    this.open.clear();
  }

  private async followJob(job: Job): Promise<void> {
    if (!OPEN_STATUSES.has(job.status)) return this.send(job);
    this.watchChild(job);
    // It may have ended between the read and the watch.
    const again = await this.deps.jobs.getById(job.jid);
    if (again && !OPEN_STATUSES.has(again.status)) this.send(again);
  }

  private async poll(jid: string): Promise<void> {
    if (this.stopped) return;
    try {
      const { job: run } = await this.deps.multi.get(jid, false, false);
      await this.readNewChildren(jid);
      if (run.status !== 'running') {
        // The run has ended: its last children were just read; any still open missed their event.
        for (const child of [...this.open.values()]) {
          const stored = await this.deps.jobs.getById(child.jid);
          if (stored && !OPEN_STATUSES.has(stored.status)) this.send(stored);
        }
        if (this.open.size === 0) return this.end();
      }
    } catch (err) {
      this.deps.log.warn({ err, jid }, 'following a run: reading it failed');
    }
    if (!this.stopped) this.timer = setTimeout(() => void this.poll(jid), this.deps.pollMs ?? FOLLOW_POLL_MS);
  }

  private async readNewChildren(jid: string): Promise<void> {
    for (;;) {
      const offset = this.seen;
      const page = (await this.deps.jobs.listChildren(jid, byCreation(offset, FOLLOW_PAGE))).data;
      if (this.stopped) return;
      this.seen += page.length;
      const watched: Job[] = [];
      for (const child of page) {
        if (!OPEN_STATUSES.has(child.status)) this.send(child);
        else {
          this.watchChild(child);
          watched.push(child);
        }
      }
      if (watched.length > 0) {
        // Some may have ended between the read and the watch: read the same page again.
        const again = (await this.deps.jobs.listChildren(jid, byCreation(offset, FOLLOW_PAGE))).data;
        for (const child of again)
          if (this.open.has(child.jid) && !OPEN_STATUSES.has(child.status)) this.send(child);
      }
      if (page.length < FOLLOW_PAGE) return;
    }
  }

  private watchChild(job: Job): void {
    const ref: ChildRef = { jid: job.jid, client_id: job.client_id, client_name: job.client_name };
    this.open.set(job.jid, ref);
    this.deps.watch.watch(job.jid, job.client_id, {
      chunk: (_jid, stream, text) => this.observer.chunk(ref, stream, text),
      finished: (jid) => {
        this.deps.jobs
          .getById(jid)
          .then((stored) => stored && this.send(stored))
          .catch((err: unknown) => this.deps.log.warn({ err, jid }, 'reading a followed job failed'));
      },
    });
    if (job.status === 'running') this.observer.chunk(ref, 'stdout', '');
  }

  private send(job: Job): void {
    if (this.stopped || this.sent.has(job.jid)) return;
    this.sent.add(job.jid);
    if (this.open.delete(job.jid)) this.deps.watch.unwatch(job.jid);
    this.observer.final(job);
    if (this.single) this.end();
  }

  private end(): void {
    if (this.stopped) return;
    this.stop();
    this.observer.done();
  }
}
