import type { Job, JobRunReply, JobStatus, ListQuery } from '@svc/protocol';
import {
  noJobs,
  type ClaimedJob,
  type EndedQueuedJob,
  type StoredJob,
  type FinishedJob,
  type JobOutcome,
  type JobRepository,
  type JobStatusCounts,
  type OverdueJob,
  type StartedJob,
} from './ports.js';

/**
 * Counts what this process did to jobs, for monitoring: how many entered each status (created `running`, or
 * created already `failed` when a multi-client child could not start; ended `successful`, `failed` or `unknown`)
 * and which jobs this process created that have not ended. Reading it costs nothing per job.
 */
export class JobTally {
  private readonly entered: JobStatusCounts = noJobs();
  private readonly running = new Set<string>();

  /** Jobs that entered each status since this process started. */
  enteredCounts(): Readonly<JobStatusCounts> {
    return this.entered;
  }

  /** Jobs this process created that are still running (a result of an older process's job does not count). */
  get runningCount(): number {
    return this.running.size;
  }

  created(job: Job): void {
    this.entered[job.status] += 1;
    if (job.status === 'running') this.running.add(job.jid);
  }

  ended(item: FinishedJob): void {
    this.entered[item.outcome.status] += 1;
    this.running.delete(item.jid);
  }

  /** A queued job was delivered (it runs now) or ended without running. */
  moved(jid: string, status: JobStatus): void {
    this.entered[status] += 1;
    if (status === 'running') this.running.add(jid);
  }
}

/**
 * The job repository, counting every stored change of status in a tally: every path that creates or ends a job
 * (one client or many, results, refusals) goes through these writes, so nothing is counted twice or missed.
 */
export class CountingJobRepository implements JobRepository {
  constructor(
    private readonly repository: JobRepository,
    private readonly tally: JobTally,
  ) {}

  async insert(job: StoredJob): Promise<void> {
    await this.repository.insert(job);
    this.tally.created(job);
  }

  async insertMany(jobs: readonly StoredJob[]): Promise<void> {
    await this.repository.insertMany(jobs);
    for (const job of jobs) this.tally.created(job);
  }

  async finish(clientId: string, jid: string, outcome: JobOutcome): Promise<boolean> {
    const stored = await this.repository.finish(clientId, jid, outcome);
    if (stored) this.tally.ended({ clientId, jid, outcome });
    return stored;
  }

  async finishMany(items: readonly FinishedJob[]): Promise<boolean[]> {
    const stored = await this.repository.finishMany(items);
    items.forEach((item, i) => {
      if (stored[i]) this.tally.ended(item);
    });
    return stored;
  }

  listByMultiJob(multiJobId: string): Promise<Job[]> {
    return this.repository.listByMultiJob(multiJobId);
  }

  listChildren(multiJobId: string, query: ListQuery): Promise<{ data: Job[]; count: number }> {
    return this.repository.listChildren(multiJobId, query);
  }

  countByMultiJob(multiJobId: string): Promise<JobStatusCounts> {
    return this.repository.countByMultiJob(multiJobId);
  }

  getById(jid: string): Promise<Job | undefined> {
    return this.repository.getById(jid);
  }

  get(clientId: string, jid: string): Promise<Job | undefined> {
    return this.repository.get(clientId, jid);
  }

  markStarted(jid: string, started: JobRunReply): Promise<void> {
    return this.repository.markStarted(jid, started);
  }

  markStartedMany(items: readonly StartedJob[]): Promise<void> {
    return this.repository.markStartedMany(items);
  }

  async recordMany(starts: readonly StartedJob[], finishes: readonly FinishedJob[]): Promise<boolean[]> {
    const stored = await this.repository.recordMany(starts, finishes);
    finishes.forEach((item, i) => {
      if (stored[i]) this.tally.ended(item);
    });
    return stored;
  }

  overdue(now: Date, limit: number): Promise<OverdueJob[]> {
    return this.repository.overdue(now, limit);
  }

  awaitingResult(
    clientIds: readonly string[],
    before: Date,
    unconfirmed?: boolean,
  ): Promise<{ clientId: string; jid: string }[]> {
    return this.repository.awaitingResult(clientIds, before, unconfirmed);
  }

  lastFinishedAt(multiJobId: string): Promise<string | undefined> {
    return this.repository.lastFinishedAt(multiJobId);
  }

  childClientIds(multiJobId: string): Promise<string[]> {
    return this.repository.childClientIds(multiJobId);
  }

  list(clientId: string, query: ListQuery): Promise<{ data: Job[]; count: number }> {
    return this.repository.list(clientId, query);
  }

  queuedFor(clientId: string, now: Date, limit: number): Promise<string[]> {
    return this.repository.queuedFor(clientId, now, limit);
  }

  clientsWithQueued(clientIds: readonly string[], now: Date): Promise<Set<string>> {
    return this.repository.clientsWithQueued(clientIds, now);
  }

  async claimQueued(clientId: string, jid: string, now: Date): Promise<ClaimedJob | undefined> {
    const claimed = await this.repository.claimQueued(clientId, jid, now);
    if (claimed) this.tally.moved(jid, 'running');
    return claimed;
  }

  async endQueued(items: readonly EndedQueuedJob[]): Promise<boolean[]> {
    const stored = await this.repository.endQueued(items);
    items.forEach((item, i) => {
      if (stored[i]) this.tally.moved(item.jid, item.status);
    });
    return stored;
  }

  expiredQueued(now: Date, limit: number): Promise<OverdueJob[]> {
    return this.repository.expiredQueued(now, limit);
  }

  childrenIn(
    multiJobId: string,
    status: JobStatus,
    limit: number,
    unconfirmed?: boolean,
  ): Promise<OverdueJob[]> {
    return this.repository.childrenIn(multiJobId, status, limit, unconfirmed);
  }
}
