/**
 * The job writes of a fan-out on PostgreSQL, two ways each, in one fresh database (127.0.0.1:5432, dropped at the
 * end), alternated over BENCH_RUNS rounds: BENCH_JOBS (10,240) new job rows in batches of 256 as one multi-row
 * INSERT (a parameter per value) and as INSERT … SELECT FROM unnest (an array per column), what svcd does; then
 * their results, one UPDATE per job in a transaction per batch and one UPDATE … FROM unnest per batch, what svcd
 * does. Printed: wall time, this process's CPU and the PostgreSQL server's CPU (its processes in /proc), medians.
 *
 *   npm run bench:pg-job-writes
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Insertable } from 'kysely';
import { createTestDatabase } from '../test-support/databases.js';
import type { FinishedJob } from '../packages/server/src/core/jobs/ports.js';
import { openDatabase } from '../packages/server/src/storage/database.js';
import { migrateToLatest } from '../packages/server/src/storage/migrations.js';
import { insertInBulk, recordInBulk } from '../packages/server/src/storage/postgres-job-writes.js';
import type { JobsTable } from '../packages/server/src/storage/schema.js';
import { runBench } from './support/bench-runner.js';
import { envNumber } from './support/child-processes.js';
import { cpuByGroup } from './support/proc-stats.js';
import { summarize } from './support/latency.js';
import { loadAverage, progress, table } from './support/report.js';

const JOBS = envNumber('BENCH_JOBS', 10_240, 1_000_000);
const RUNS = envNumber('BENCH_RUNS', 5, 100);
const BATCH = 256;

interface Cost {
  wallMs: number;
  nodeMs: number;
  postgresMs: number;
}

const postgresCpu = () =>
  cpuByGroup((_pid, commandLine) => (commandLine.startsWith('postgres') ? 'postgres' : undefined)).get(
    'postgres',
  ) ?? 0;

async function measure(work: () => Promise<void>): Promise<Cost> {
  const cpu = process.cpuUsage();
  const postgres = postgresCpu();
  const started = performance.now();
  await work();
  const used = process.cpuUsage(cpu);
  return {
    wallMs: performance.now() - started,
    nodeMs: (used.user + used.system) / 1000,
    postgresMs: postgresCpu() - postgres,
  };
}

const newRow = (i: number, runId: string): Insertable<JobsTable> => ({
  jid: randomUUID(),
  client_id: `client-${i}`,
  client_name: `client-${i}`,
  multi_job_id: runId,
  status: 'running',
  created_at: Date.now(),
  started_at: null,
  finished_at: null,
  created_by: 'admin',
  command: 'noop',
  interpreter: '',
  cwd: '',
  is_sudo: 0,
  is_script: 0,
  pid: null,
  timeout_sec: 60,
  exit_code: null,
  error: '',
  stdout: '',
  stderr: '',
  stdout_truncated: 0,
  stderr_truncated: 0,
  result_due_at: Date.now() + 90_000,
  queue_expires_at: null,
  timeout_kill: null,
  queued_script: null,
});

const finished = (row: Insertable<JobsTable>): FinishedJob => ({
  clientId: row.client_id,
  jid: row.jid,
  outcome: {
    status: 'successful',
    exit_code: 0,
    error: '',
    finished_at: new Date().toISOString(),
    stdout: '',
    stderr: '',
    stdout_truncated: false,
    stderr_truncated: false,
  },
  started: { pid: 0, started_at: new Date().toISOString() },
});

const batches = <T>(items: T[]): T[][] =>
  Array.from({ length: Math.ceil(items.length / BATCH) }, (_, i) => items.slice(i * BATCH, (i + 1) * BATCH));

async function main(): Promise<boolean> {
  progress(`${JOBS} jobs, ${RUNS} rounds; load average ${loadAverage()}`);
  const test = await createTestDatabase('postgres');
  const database = await openDatabase(test.settings, { dataDir: test.dataDir });
  const { db } = database;
  const costs = new Map<string, Cost[]>();
  const add = (name: string, cost: Cost) => costs.set(name, [...(costs.get(name) ?? []), cost]);
  try {
    await migrateToLatest(db, 'postgres');
    for (let run = 1; run <= RUNS; run++) {
      for (const way of ['per value', 'unnest'] as const) {
        const rows = Array.from({ length: JOBS }, (_, i) => newRow(i, randomUUID()));
        add(
          `insert, ${way}`,
          await measure(async () => {
            for (const batch of batches(rows))
              if (way === 'unnest') await insertInBulk(db, batch);
              else await db.insertInto('jobs').values(batch).execute();
          }),
        );
        add(
          `results, ${way === 'unnest' ? 'unnest' : 'one UPDATE per job'}`,
          await measure(async () => {
            for (const batch of batches(rows.map(finished)))
              if (way === 'unnest') await db.transaction().execute((tx) => recordInBulk(tx, [], batch));
              else
                await db.transaction().execute(async (tx) => {
                  for (const job of batch)
                    await tx
                      .updateTable('jobs')
                      .set({
                        status: job.outcome.status,
                        finished_at: Date.parse(job.outcome.finished_at),
                        exit_code: 0,
                        pid: 0,
                        started_at: Date.parse(job.started?.started_at ?? ''),
                        result_due_at: null,
                      })
                      .where('jid', '=', job.jid)
                      .where('client_id', '=', job.clientId)
                      .where('status', '=', 'running')
                      .execute();
                });
          }),
        );
      }
      progress(`round ${run}/${RUNS} done`);
    }
  } finally {
    await db.destroy();
    await test.drop();
  }
  const ms = (values: number[]) => `${summarize(values).p50.toFixed(0)} ms`;
  process.stdout.write(
    `\nPostgreSQL job writes of ${JOBS} jobs in batches of ${BATCH}, medians of ${RUNS}\n\n` +
      table(
        ['writes', 'wall', 'node CPU', 'PostgreSQL CPU'],
        [...costs].map(([name, list]) => [
          name,
          ms(list.map((c) => c.wallMs)),
          ms(list.map((c) => c.nodeMs)),
          ms(list.map((c) => c.postgresMs)),
        ]),
      ) +
      '\n',
  );
  return true;
}

await runBench(main, false);
