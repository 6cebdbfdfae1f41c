import { sql, type Insertable, type Kysely } from 'kysely';
import type { FinishedJob, StartedJob } from '../core/jobs/ports.js';
import { flag, storable } from './job-values.js';
import type { JobsTable, StorageSchema } from './schema.js';

/**
 * PostgreSQL: a batch of job starts as one UPDATE over arrays. One statement per batch instead of one round trip
 * per job, which is what a fan-out to thousands of clients through one node spends its time on otherwise.
 */
export async function startAllInBulk(
  db: Kysely<StorageSchema>,
  starts: readonly StartedJob[],
): Promise<void> {
  if (starts.length === 0) return;
  await sql`
    UPDATE jobs AS j SET pid = u.pid, started_at = u.started_at
    FROM unnest(
      ${starts.map((s) => s.jid)}::text[],
      ${starts.map((s) => s.started.pid)}::integer[],
      ${starts.map((s) => Date.parse(s.started.started_at))}::bigint[]
    ) AS u(jid, pid, started_at)
    WHERE j.jid = u.jid`.execute(db);
}

/**
 * PostgreSQL: starts, then results, each as one UPDATE over arrays, with the same conditions as one job's UPDATE (its
 * client, still running or presumed unknown). A result that carries its start records both; when that result is
 * not stored the start still is. `finishes` must name each job once. Answers per result whether it was stored.
 */
export async function recordInBulk(
  db: Kysely<StorageSchema>,
  starts: readonly StartedJob[],
  finishes: readonly FinishedJob[],
): Promise<boolean[]> {
  await startAllInBulk(db, starts);
  if (finishes.length === 0) return [];
  const column = <T>(pick: (f: FinishedJob) => T): T[] => finishes.map(pick);
  const result = await sql<{ jid: string }>`
    UPDATE jobs AS j SET
      status = u.status, finished_at = u.finished_at, exit_code = u.exit_code, error = u.error,
      stdout = u.stdout, stderr = u.stderr, stdout_truncated = u.stdout_truncated,
      stderr_truncated = u.stderr_truncated, status_presumed = u.status_presumed, result_due_at = NULL,
      pid = COALESCE(u.pid, j.pid), started_at = COALESCE(u.started_at, j.started_at)
    FROM unnest(
      ${column((f) => f.jid)}::text[],
      ${column((f) => f.clientId)}::text[],
      ${column((f) => f.outcome.status)}::text[],
      ${column((f) => Date.parse(f.outcome.finished_at))}::bigint[],
      ${column((f) => f.outcome.exit_code)}::integer[],
      ${column((f) => f.outcome.error)}::text[],
      ${column((f) => storable(f.outcome.stdout))}::text[],
      ${column((f) => storable(f.outcome.stderr))}::text[],
      ${column((f) => flag(f.outcome.stdout_truncated))}::smallint[],
      ${column((f) => flag(f.outcome.stderr_truncated))}::smallint[],
      ${column((f) => flag(f.outcome.presumed === true))}::smallint[],
      ${column((f) => f.started?.pid ?? null)}::integer[],
      ${column((f) => (f.started ? Date.parse(f.started.started_at) : null))}::bigint[]
    ) AS u(jid, client_id, status, finished_at, exit_code, error, stdout, stderr, stdout_truncated,
           stderr_truncated, status_presumed, pid, started_at)
    WHERE j.jid = u.jid AND j.client_id = u.client_id AND (j.status = 'running' OR j.status_presumed = 1)
    RETURNING j.jid`.execute(db);
  const stored = new Set(result.rows.map((row) => row.jid));
  await startAllInBulk(
    db,
    finishes.flatMap((f) => (f.started && !stored.has(f.jid) ? [{ jid: f.jid, started: f.started }] : [])),
  );
  return finishes.map((f) => stored.has(f.jid));
}

/** The PostgreSQL type of each column a job row is inserted with. */
const INSERT_TYPES: Record<keyof Insertable<JobsTable>, string> = {
  jid: 'text',
  client_id: 'text',
  client_name: 'text',
  multi_job_id: 'text',
  status: 'text',
  created_at: 'bigint',
  started_at: 'bigint',
  finished_at: 'bigint',
  created_by: 'text',
  command: 'text',
  interpreter: 'text',
  cwd: 'text',
  is_sudo: 'smallint',
  is_script: 'smallint',
  pid: 'integer',
  timeout_sec: 'integer',
  exit_code: 'integer',
  error: 'text',
  stdout: 'text',
  stderr: 'text',
  stdout_truncated: 'smallint',
  stderr_truncated: 'smallint',
  result_due_at: 'bigint',
  status_presumed: 'smallint',
  queue_expires_at: 'bigint',
  timeout_kill: 'smallint',
  queued_script: 'text',
};

/**
 * PostgreSQL: job rows inserted from one array per column (`unnest`), a few dozen parameters for the whole batch
 * instead of one per value (7,000 for 256 rows), which PostgreSQL and the driver would each handle one by one.
 */
export async function insertInBulk(
  db: Kysely<StorageSchema>,
  rows: readonly Insertable<JobsTable>[],
): Promise<void> {
  const columns = Object.keys(rows[0] ?? {}) as (keyof Insertable<JobsTable>)[];
  if (columns.length === 0) return;
  const arrays = columns.map(
    (column) => sql`${rows.map((row) => row[column] ?? null)}::${sql.raw(INSERT_TYPES[column])}[]`,
  );
  await sql`INSERT INTO jobs (${sql.join(columns.map((column) => sql.ref(column)))})
    SELECT * FROM unnest(${sql.join(arrays)})`.execute(db);
}
