import type { Job, JobRunReply, JobStatus, ListQuery } from '@svc/protocol';
import {
  noJobs,
  RESULT_GRACE_MS,
  type ClaimedJob,
  type EndedQueuedJob,
  type StoredJob,
  resultDueAt,
  type FinishedJob,
  type JobOutcome,
  type JobRepository,
  type JobStatusCounts,
  type OverdueJob,
  type StartedJob,
} from '../core/jobs/ports.js';
import type { Database } from './database.js';
import { isDeadlock, withStorageErrors } from './errors.js';
import { executeSqlList, type SqlColumnMap } from './list-query-sql.js';
import { flag, storable } from './job-values.js';
import { insertInBulk, recordInBulk } from './postgres-job-writes.js';
import type { CompiledQuery, Insertable, Kysely, Selectable } from 'kysely';
import type { JobsTable, StorageSchema } from './schema.js';

/** A batch of job writes chosen as a deadlock victim is run again at most this many times in all. */
const DEADLOCK_ATTEMPTS = 3;

const COLUMNS: SqlColumnMap = {
  jid: 'jid',
  client_id: 'client_id',
  status: 'status',
  created_at: { column: 'created_at', type: 'number' },
  started_at: { column: 'started_at', type: 'number' },
  finished_at: { column: 'finished_at', type: 'number' },
  created_by: 'created_by',
  command: 'command',
  is_script: { column: 'is_script', type: 'number' },
  multi_job_id: 'multi_job_id',
};

const toMillis = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso));
const toIso = (ms: number | string | null): string | null =>
  ms === null ? null : new Date(Number(ms)).toISOString();
const isSet = (value: number | string | boolean): boolean => Number(value) === 1 || value === true;

function toJob(row: Selectable<JobsTable>): Job {
  return {
    jid: row.jid,
    status: row.status as Job['status'],
    started_at: toIso(row.started_at),
    finished_at: toIso(row.finished_at),
    client_id: row.client_id,
    client_name: row.client_name,
    command: row.command,
    cwd: row.cwd,
    is_sudo: isSet(row.is_sudo),
    is_script: isSet(row.is_script),
    interpreter: row.interpreter,
    pid: row.pid === null ? null : Number(row.pid),
    created_by: row.created_by,
    created_at: toIso(row.created_at) ?? '',
    timeout_sec: Number(row.timeout_sec),
    ...(row.multi_job_id === null ? {} : { multi_job_id: row.multi_job_id }),
    ...(row.timeout_kill !== null && isSet(row.timeout_kill) ? { timeout_kill: true } : {}),
    ...(row.queue_expires_at === null ? {} : { queue_expires_at: toIso(row.queue_expires_at) ?? '' }),
    exit_code: row.exit_code === null ? null : Number(row.exit_code),
    error: row.error,
    result: {
      stdout: row.stdout,
      stderr: row.stderr,
      stdout_truncated: isSet(row.stdout_truncated),
      stderr_truncated: isSet(row.stderr_truncated),
    },
  };
}

function toRow(job: StoredJob): Insertable<JobsTable> {
  return {
    jid: job.jid,
    client_id: job.client_id,
    client_name: job.client_name,
    multi_job_id: job.multi_job_id ?? null,
    status: job.status,
    created_at: Date.parse(job.created_at),
    started_at: toMillis(job.started_at),
    finished_at: toMillis(job.finished_at),
    created_by: job.created_by,
    command: job.command,
    interpreter: job.interpreter,
    cwd: job.cwd,
    is_sudo: flag(job.is_sudo),
    is_script: flag(job.is_script),
    pid: job.pid,
    timeout_sec: job.timeout_sec,
    exit_code: job.exit_code,
    error: job.error,
    stdout: storable(job.result.stdout),
    stderr: storable(job.result.stderr),
    stdout_truncated: flag(job.result.stdout_truncated),
    stderr_truncated: flag(job.result.stderr_truncated),
    result_due_at: job.status === 'running' ? resultDueAt(job) : null,
    queue_expires_at: toMillis(job.queue_expires_at ?? null),
    timeout_kill: job.timeout_kill ? 1 : null,
    queued_script: job.status === 'queued' ? (job.queuedScript ?? null) : null,
  };
}

/** Jobs in the `jobs` table (migration 004_jobs); times are epoch milliseconds. */
export class SqlJobRepository implements JobRepository {
  /**
   * The two UPDATEs every job of a fan-out runs (its start, its result), built and compiled once: only their
   * parameters change, in the order of the `set` keys, then the `where` values.
   */
  readonly #markStarted: CompiledQuery;
  readonly #finish: CompiledQuery;
  /** #finish that also records the start (pid, started_at come after the result's values). */
  readonly #finishStarted: CompiledQuery;

  constructor(private readonly database: Database) {
    const { db } = database;
    this.#markStarted = db.updateTable('jobs').set({ pid: 0, started_at: 0 }).where('jid', '=', '').compile();
    const result = {
      status: '',
      finished_at: 0,
      exit_code: 0,
      error: '',
      stdout: '',
      stderr: '',
      stdout_truncated: 0,
      stderr_truncated: 0,
      status_presumed: 0,
      result_due_at: null,
    };
    // Parameters: the `set` values in order, then jid, client_id, 'running', 1.
    const finish = (set: typeof result & { pid?: number; started_at?: number }) =>
      db
        .updateTable('jobs')
        .set(set)
        .where('jid', '=', '')
        .where('client_id', '=', '')
        .where((eb) => eb.or([eb('status', '=', 'running'), eb('status_presumed', '=', 1)]))
        .compile();
    this.#finish = finish(result);
    this.#finishStarted = finish({ ...result, pid: 0, started_at: 0 });
  }

  insert(job: StoredJob): Promise<void> {
    return this.insertMany([job]);
  }

  queuedFor(clientId: string, now: Date, limit: number): Promise<string[]> {
    return withStorageErrors(async () => {
      const rows = await this.database.db
        .selectFrom('jobs')
        .select('jid')
        .where('client_id', '=', clientId)
        .where('status', '=', 'queued')
        .where('queue_expires_at', '>', now.getTime())
        .orderBy('created_at')
        .orderBy('jid')
        .limit(limit)
        .execute();
      return rows.map((row) => row.jid);
    });
  }

  clientsWithQueued(clientIds: readonly string[], now: Date): Promise<Set<string>> {
    if (clientIds.length === 0) return Promise.resolve(new Set());
    return withStorageErrors(async () => {
      const rows = await this.database.db
        .selectFrom('jobs')
        .select('client_id')
        .distinct()
        .where('client_id', 'in', clientIds)
        .where('status', '=', 'queued')
        .where('queue_expires_at', '>', now.getTime())
        .execute();
      return new Set(rows.map((row) => row.client_id));
    });
  }

  /** Reads the job and moves it from queued to running in one transaction; the conditional UPDATE decides. */
  claimQueued(clientId: string, jid: string, now: Date): Promise<ClaimedJob | undefined> {
    return this.inTransaction(async (db) => {
      const row = await db
        .selectFrom('jobs')
        .selectAll()
        .where('jid', '=', jid)
        .where('client_id', '=', clientId)
        .where('status', '=', 'queued')
        .executeTakeFirst();
      if (!row) return undefined;
      const at = now.getTime();
      // The deadline counts from the delivery, not from the queueing.
      const result = await db
        .updateTable('jobs')
        .set({
          status: 'running',
          queued_script: null,
          result_due_at: at + Number(row.timeout_sec) * 1000 + RESULT_GRACE_MS,
        })
        .where('jid', '=', jid)
        .where('status', '=', 'queued')
        .where('queue_expires_at', '>', at)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) return undefined;
      const job = toJob(row);
      return {
        jid,
        command: job.is_script ? '' : job.command,
        ...(job.is_script
          ? { script: row.queued_script ?? Buffer.from(job.command).toString('base64') }
          : {}),
        interpreter: job.interpreter,
        cwd: job.cwd,
        is_sudo: job.is_sudo,
        timeout_sec: job.timeout_sec,
        ...(job.timeout_kill ? { timeout_kill: true } : {}),
      };
    });
  }

  endQueued(items: readonly EndedQueuedJob[]): Promise<boolean[]> {
    if (items.length === 0) return Promise.resolve([]);
    return this.inTransaction(async (db) => {
      const stored: boolean[] = [];
      for (const item of items) {
        const result = await db
          .updateTable('jobs')
          .set({
            status: item.status,
            error: item.error,
            finished_at: Date.parse(item.finished_at),
            queued_script: null,
          })
          .where('jid', '=', item.jid)
          .where('status', '=', 'queued')
          .executeTakeFirst();
        stored.push(Number(result.numUpdatedRows) === 1);
      }
      return stored;
    });
  }

  expiredQueued(now: Date, limit: number): Promise<OverdueJob[]> {
    return withStorageErrors(async () => {
      const rows = await this.database.db
        .selectFrom('jobs')
        .select(['jid', 'client_id'])
        .where('status', '=', 'queued')
        .where('queue_expires_at', '<=', now.getTime())
        .orderBy('queue_expires_at')
        .limit(limit)
        .execute();
      return rows.map((row) => ({ jid: row.jid, clientId: row.client_id }));
    });
  }

  childrenIn(
    multiJobId: string,
    status: JobStatus,
    limit: number,
    unconfirmed = false,
  ): Promise<OverdueJob[]> {
    return withStorageErrors(async () => {
      let query = this.database.db
        .selectFrom('jobs')
        .select(['jid', 'client_id'])
        .where('multi_job_id', '=', multiJobId)
        .where('status', '=', status);
      if (unconfirmed) query = query.where('started_at', 'is', null);
      const rows = await query.orderBy('created_at').orderBy('jid').limit(limit).execute();
      return rows.map((row) => ({ jid: row.jid, clientId: row.client_id }));
    });
  }

  /** One multi-row INSERT; the caller keeps batches small enough for every engine's parameter limit. */
  insertMany(jobs: readonly StoredJob[]): Promise<void> {
    if (jobs.length === 0) return Promise.resolve();
    return withStorageErrors(async () => {
      if (this.database.engine === 'postgres') await insertInBulk(this.database.db, jobs.map(toRow));
      else await this.database.db.insertInto('jobs').values(jobs.map(toRow)).execute();
    });
  }

  /** The children of a multi-client job in the order they were created. */
  listByMultiJob(multiJobId: string): Promise<Job[]> {
    return withStorageErrors(async () => {
      const rows = await this.database.db
        .selectFrom('jobs')
        .selectAll()
        .where('multi_job_id', '=', multiJobId)
        .orderBy('created_at')
        .orderBy('client_id')
        .execute();
      return rows.map(toJob);
    });
  }

  listChildren(multiJobId: string, query: ListQuery): Promise<{ data: Job[]; count: number }> {
    return withStorageErrors(async () => {
      const base = this.database.db.selectFrom('jobs').selectAll().where('multi_job_id', '=', multiJobId);
      const { rows, count } = await executeSqlList(base, query, COLUMNS, { tieBreaker: 'jid' });
      return { data: rows.map(toJob), count };
    });
  }

  countByMultiJob(multiJobId: string): Promise<JobStatusCounts> {
    return withStorageErrors(async () => {
      const rows = await this.database.db
        .selectFrom('jobs')
        .select(['status', (eb) => eb.fn.countAll().as('n')])
        .where('multi_job_id', '=', multiJobId)
        .groupBy('status')
        .execute();
      const counts = noJobs();
      for (const row of rows) if (row.status in counts) counts[row.status as Job['status']] = Number(row.n);
      return counts;
    });
  }

  /** The job with that id whoever's it is, or undefined. */
  getById(jid: string): Promise<Job | undefined> {
    return withStorageErrors(async () => {
      const row = await this.database.db
        .selectFrom('jobs')
        .selectAll()
        .where('jid', '=', jid)
        .executeTakeFirst();
      return row ? toJob(row) : undefined;
    });
  }

  get(clientId: string, jid: string): Promise<Job | undefined> {
    return withStorageErrors(async () => {
      const row = await this.database.db
        .selectFrom('jobs')
        .selectAll()
        .where('jid', '=', jid)
        .where('client_id', '=', clientId)
        .executeTakeFirst();
      return row ? toJob(row) : undefined;
    });
  }

  markStarted(jid: string, started: JobRunReply): Promise<void> {
    return this.markStartedMany([{ jid, started }]);
  }

  /** One transaction for all of them. */
  async markStartedMany(items: readonly StartedJob[]): Promise<void> {
    await this.recordMany(items, []);
  }

  async finish(clientId: string, jid: string, outcome: JobOutcome): Promise<boolean> {
    const [stored] = await this.finishMany([{ clientId, jid, outcome }]);
    return stored ?? false;
  }

  /** One transaction for all of them; says per item whether it was stored. */
  finishMany(items: readonly FinishedJob[]): Promise<boolean[]> {
    return this.recordMany([], items);
  }

  /**
   * One transaction. A result that carries its start records both in one UPDATE; when the result is not stored
   * (another client's job, or one no longer running) the start is still recorded on its own. On PostgreSQL the
   * batch takes one statement per kind of write (postgres-job-writes.ts) unless a job has two results in it.
   */
  recordMany(starts: readonly StartedJob[], finishes: readonly FinishedJob[]): Promise<boolean[]> {
    if (this.database.engine === 'postgres' && new Set(finishes.map((f) => f.jid)).size === finishes.length)
      return this.inTransaction((db) => recordInBulk(db, starts, finishes));
    return this.inTransaction(async (db) => {
      const markStarted = (jid: string, started: JobRunReply) =>
        db.executeQuery({
          ...this.#markStarted,
          parameters: [started.pid, Date.parse(started.started_at), jid],
        });
      for (const { jid, started } of starts) await markStarted(jid, started);
      const stored: boolean[] = [];
      for (const { clientId, jid, outcome, started } of finishes) {
        const values = [
          outcome.status,
          Date.parse(outcome.finished_at),
          outcome.exit_code,
          outcome.error,
          storable(outcome.stdout),
          storable(outcome.stderr),
          flag(outcome.stdout_truncated),
          flag(outcome.stderr_truncated),
          flag(outcome.presumed === true),
          null,
        ];
        const where = [jid, clientId, 'running', 1];
        const result = await db.executeQuery(
          started
            ? {
                ...this.#finishStarted,
                parameters: [...values, started.pid, Date.parse(started.started_at), ...where],
              }
            : { ...this.#finish, parameters: [...values, ...where] },
        );
        const done = Number(result.numAffectedRows ?? 0) === 1;
        if (!done && started) await markStarted(jid, started);
        stored.push(done);
      }
      return stored;
    });
  }

  /**
   * A single statement runs alone; several share one transaction (one commit, one fsync). Nodes of a cluster write
   * the same jobs in batches of their own (the coordinator their starts, the node holding the client their
   * results), so two batches can lock two jobs in opposite orders: the engine then aborts one as a deadlock victim,
   * and that batch is run again.
   */
  private inTransaction<T>(work: (db: Kysely<StorageSchema>) => Promise<T>): Promise<T> {
    return withStorageErrors(async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.database.db.transaction().execute(work);
        } catch (err) {
          if (attempt >= DEADLOCK_ATTEMPTS || !isDeadlock(err)) throw err;
        }
      }
    });
  }

  overdue(now: Date, limit: number): Promise<OverdueJob[]> {
    return withStorageErrors(async () => {
      const rows = await this.database.db
        .selectFrom('jobs')
        .select(['jid', 'client_id'])
        .where('result_due_at', '<=', now.getTime())
        .where('status', '=', 'running')
        .orderBy('result_due_at')
        .limit(limit)
        .execute();
      return rows.map((row) => ({ jid: row.jid, clientId: row.client_id }));
    });
  }

  awaitingResult(
    clientIds: readonly string[],
    before: Date,
    unconfirmed = false,
  ): Promise<{ clientId: string; jid: string }[]> {
    if (clientIds.length === 0) return Promise.resolve([]);
    return withStorageErrors(async () => {
      let query = this.database.db
        .selectFrom('jobs')
        .select(['client_id', 'jid'])
        .where('client_id', 'in', clientIds)
        .where((eb) =>
          eb.or([
            eb('status', '=', 'running'),
            eb.and([eb('status', '=', 'unknown'), eb('status_presumed', '=', 1)]),
          ]),
        )
        .where('created_at', '<', before.getTime());
      if (!unconfirmed) query = query.where('started_at', 'is not', null);
      const rows = await query.execute();
      return rows.map((row) => ({ clientId: row.client_id, jid: row.jid }));
    });
  }

  lastFinishedAt(multiJobId: string): Promise<string | undefined> {
    return withStorageErrors(async () => {
      const row = await this.database.db
        .selectFrom('jobs')
        .select((eb) => eb.fn.max('finished_at').as('last'))
        .where('multi_job_id', '=', multiJobId)
        .executeTakeFirst();
      return row?.last == null ? undefined : (toIso(row.last) ?? undefined);
    });
  }

  childClientIds(multiJobId: string): Promise<string[]> {
    return withStorageErrors(async () => {
      const rows = await this.database.db
        .selectFrom('jobs')
        .select('client_id')
        .where('multi_job_id', '=', multiJobId)
        .execute();
      return rows.map((row) => row.client_id);
    });
  }

  list(clientId: string, query: ListQuery): Promise<{ data: Job[]; count: number }> {
    return withStorageErrors(async () => {
      const base = this.database.db.selectFrom('jobs').selectAll().where('client_id', '=', clientId);
      const { rows, count } = await executeSqlList(base, query, COLUMNS, { tieBreaker: 'jid' });
      return { data: rows.map(toJob), count };
    });
  }
}
