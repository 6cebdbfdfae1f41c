import { flag } from './job-values.js';
import type { Selectable } from 'kysely';
import type { ListQuery, MultiJobSummary } from '@svc/protocol';
import type {
  InterruptedRun,
  MultiJobRepository,
  RolloutState,
  StoredMultiJob,
} from '../core/jobs/multi-job-ports.js';
import type { Database } from './database.js';
import { withStorageErrors } from './errors.js';
import { buildSqlList, executeSqlList, type SqlColumnMap } from './list-query-sql.js';
import type { MultiJobsTable } from './schema.js';

const COLUMNS: SqlColumnMap = {
  jid: 'jid',
  started_at: { column: 'started_at', type: 'number' },
  created_by: 'created_by',
  command: 'command',
  is_script: { column: 'is_script', type: 'number' },
  schedule_id: 'schedule_id',
};

/** Runs read per query while `listWhere` looks through them (each carries its target ids). */
const SCAN_PAGE = 200;

const isSet = (value: number | string | boolean): boolean => Number(value) === 1 || value === true;
const json = (value: unknown): string | null => (value === null ? null : JSON.stringify(value));
const parsed = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

type SummaryRow = Omit<
  Selectable<MultiJobsTable>,
  | 'target_ids'
  | 'target_count'
  | 'run_ended_at'
  | 'coordinator_node'
  | 'batches_done'
  | 'next_batch_at'
  | 'stop_reason'
>;

/**
 * The options a run keeps besides its columns (migration 024); each only when the request gave it. Of `env` only
 * the vault references and the names of plain values (never a value).
 */
type RunOptions = Pick<
  MultiJobSummary,
  'queue_ttl' | 'timeout_kill' | 'batch_size' | 'batch_delay' | 'max_failures' | 'env' | 'env_plain'
>;
const RUN_OPTIONS = [
  'queue_ttl',
  'timeout_kill',
  'batch_size',
  'batch_delay',
  'max_failures',
  'env',
  'env_plain',
] as const;

function runOptionsJson(job: MultiJobSummary): string | null {
  const options: Record<string, unknown> = {};
  for (const key of RUN_OPTIONS) if (job[key] !== undefined) options[key] = job[key];
  return Object.keys(options).length === 0 ? null : JSON.stringify(options);
}

function rolloutState(
  row: Pick<Selectable<MultiJobsTable>, 'batches_done' | 'next_batch_at' | 'stop_reason'>,
) {
  if (row.batches_done === null) return undefined;
  const state: RolloutState = {
    batchesDone: Number(row.batches_done),
    nextBatchAt: row.next_batch_at === null ? null : new Date(Number(row.next_batch_at)),
    stopReason: row.stop_reason,
  };
  return state;
}

function toSummary(row: SummaryRow): MultiJobSummary {
  return {
    jid: row.jid,
    started_at: new Date(Number(row.started_at)).toISOString(),
    created_by: row.created_by,
    client_ids: parsed(row.client_ids),
    group_ids: parsed(row.group_ids),
    tags: parsed(row.tags),
    labels: parsed(row.labels),
    command: row.command,
    cwd: row.cwd,
    interpreter: row.interpreter,
    is_sudo: isSet(row.is_sudo),
    is_script: isSet(row.is_script),
    timeout_sec: Number(row.timeout_sec),
    concurrent: isSet(row.concurrent),
    abort_on_err: isSet(row.abort_on_err),
    ...(row.schedule_id === null || row.schedule_id === undefined ? {} : { schedule_id: row.schedule_id }),
    ...parsed<RunOptions>(row.run_options ?? null),
  };
}

/** The targeting columns, which hold up to one id per client (some 200 KiB for 10,000 clients). */
const NO_TARGETS = { client_ids: null, group_ids: null, tags: null, labels: null } as const;
const UNTARGETED = [
  'jid',
  'started_at',
  'created_by',
  'command',
  'cwd',
  'interpreter',
  'is_sudo',
  'is_script',
  'timeout_sec',
  'concurrent',
  'abort_on_err',
  'schedule_id',
  'run_options',
] as const;

/** Multi-client jobs in `multi_jobs` (migration 007_multi_jobs); their children are rows of `jobs`. */
export class SqlMultiJobRepository implements MultiJobRepository {
  /** `coordinator`: this cluster node, recorded with each run it starts. */
  constructor(
    private readonly database: Database,
    private readonly coordinator: string | null = null,
  ) {}

  insert(job: MultiJobSummary, targetIds: readonly string[]): Promise<void> {
    return withStorageErrors(async () => {
      await this.database.db
        .insertInto('multi_jobs')
        .values({
          jid: job.jid,
          started_at: Date.parse(job.started_at),
          created_by: job.created_by,
          client_ids: json(job.client_ids),
          group_ids: json(job.group_ids),
          tags: json(job.tags),
          labels: json(job.labels),
          command: job.command,
          cwd: job.cwd,
          interpreter: job.interpreter,
          is_sudo: flag(job.is_sudo),
          is_script: flag(job.is_script),
          timeout_sec: job.timeout_sec,
          concurrent: flag(job.concurrent),
          abort_on_err: flag(job.abort_on_err),
          target_ids: JSON.stringify(targetIds),
          target_count: targetIds.length,
          schedule_id: job.schedule_id ?? null,
          coordinator_node: this.coordinator,
          run_options: runOptionsJson(job),
          ...(job.batch_size === undefined ? {} : { batches_done: 0 }),
        })
        .execute();
    });
  }

  get(jid: string, withTargets = true): Promise<StoredMultiJob | undefined> {
    return withStorageErrors(async () => {
      const query = this.database.db
        .selectFrom('multi_jobs')
        .select([...UNTARGETED, 'target_count', 'batches_done', 'next_batch_at', 'stop_reason'])
        .where('jid', '=', jid);
      const row = withTargets
        ? await query.select(['client_ids', 'group_ids', 'tags', 'labels']).executeTakeFirst()
        : await query.executeTakeFirst().then((found) => found && { ...found, ...NO_TARGETS });
      if (!row) return undefined;
      const targetCount = row.target_count === null ? null : Number(row.target_count);
      const rollout = rolloutState(row);
      return { summary: toSummary(row), targetCount, ...(rollout ? { rollout } : {}) };
    });
  }

  markRunEnded(jid: string, at: Date): Promise<void> {
    return withStorageErrors(async () => {
      await this.database.db
        .updateTable('multi_jobs')
        .set({ run_ended_at: at.getTime() })
        .where('jid', '=', jid)
        .execute();
    });
  }

  saveRollout(jid: string, state: RolloutState): Promise<void> {
    return withStorageErrors(async () => {
      await this.database.db
        .updateTable('multi_jobs')
        .set({
          batches_done: state.batchesDone,
          next_batch_at: state.nextBatchAt?.getTime() ?? null,
          stop_reason: state.stopReason,
        })
        .where('jid', '=', jid)
        .execute();
    });
  }

  interrupted(): Promise<InterruptedRun[]> {
    return withStorageErrors(async () => {
      const rows = await this.database.db
        .selectFrom('multi_jobs')
        .select([...UNTARGETED, 'target_ids', 'coordinator_node'])
        .where('run_ended_at', 'is', null)
        .where('target_ids', 'is not', null)
        .execute();
      return rows.map((row) => ({
        summary: toSummary({ ...row, ...NO_TARGETS }),
        targetIds: parsed<string[]>(row.target_ids) ?? [],
        coordinator: row.coordinator_node,
      }));
    });
  }

  takeOverRun(jid: string, from: string | null, to: string): Promise<boolean> {
    return withStorageErrors(async () => {
      const result = await this.database.db
        .updateTable('multi_jobs')
        .set({ coordinator_node: to })
        .where('jid', '=', jid)
        .where('run_ended_at', 'is', null)
        .where('coordinator_node', from === null ? 'is' : '=', from)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    });
  }

  list(query: ListQuery): Promise<{ data: MultiJobSummary[]; count: number }> {
    return withStorageErrors(async () => {
      const base = this.database.db.selectFrom('multi_jobs').selectAll();
      const { rows, count } = await executeSqlList(base, query, COLUMNS, { tieBreaker: 'jid' });
      return { data: rows.map(toSummary), count };
    });
  }

  listWhere(
    query: ListQuery,
    keep: (clientId: string) => boolean,
  ): Promise<{ data: MultiJobSummary[]; count: number }> {
    return withStorageErrors(async () => {
      const scan = buildSqlList(
        this.database.db.selectFrom('multi_jobs').select(['jid', 'target_ids']),
        { sort: query.sort, filters: query.filters },
        COLUMNS,
        { tieBreaker: 'jid' },
      );
      const from = query.page?.offset ?? 0;
      const to = query.page ? from + query.page.limit : Number.POSITIVE_INFINITY;
      const wanted: string[] = [];
      let count = 0;
      for (let offset = 0; ; offset += SCAN_PAGE) {
        const rows = await scan.limit(SCAN_PAGE).offset(offset).execute();
        for (const row of rows) {
          const ids = parsed<string[]>(row.target_ids);
          if (!ids || ids.length === 0 || !ids.every(keep)) continue;
          if (count >= from && count < to) wanted.push(row.jid);
          count += 1;
        }
        if (rows.length < SCAN_PAGE) break;
      }
      if (wanted.length === 0) return { data: [], count };
      const rows = await this.database.db
        .selectFrom('multi_jobs')
        .selectAll()
        .where('jid', 'in', wanted)
        .execute();
      const byJid = new Map(rows.map((row) => [row.jid, row]));
      const data = wanted.flatMap((jid) => {
        const row = byJid.get(jid);
        return row ? [toSummary(row)] : [];
      });
      return { data, count };
    });
  }

  targetIds(jid: string): Promise<string[] | null | undefined> {
    return withStorageErrors(async () => {
      const row = await this.database.db
        .selectFrom('multi_jobs')
        .select('target_ids')
        .where('jid', '=', jid)
        .executeTakeFirst();
      return row && parsed<string[]>(row.target_ids);
    });
  }
}
