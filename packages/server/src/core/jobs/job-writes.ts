import type { FinishedJob, JobRepository, StartedJob } from './ports.js';

/** Start records and results sharing one transaction, at most: a whole fan-out window. */
export const MAX_WRITES_PER_BATCH = 256;
/** Output bytes sharing one transaction, at most (a single bigger result still goes alone). */
export const MAX_OUTPUT_BYTES_PER_BATCH = 4 * 1024 * 1024;

/** A job's start record or its result, waiting to be written. */
export type JobWrite = { start: StartedJob } | { finish: FinishedJob };

export const outputBytes = (write: JobWrite) =>
  'finish' in write ? write.finish.outcome.stdout.length + write.finish.outcome.stderr.length : 0;

/**
 * Writes a batch in one transaction, in order. A start and a result of the same job in one batch (a short job's
 * reply and result arrive together) go in one UPDATE; the repository still records the start when that result
 * is not stored. Answers per item: for a result, whether it was stored.
 */
export async function writeJobs(repository: JobRepository, writes: JobWrite[]): Promise<boolean[]> {
  const finishes: FinishedJob[] = [];
  const firstFinish = new Map<string, number>();
  const finishOf = writes.map((write) => {
    if (!('finish' in write)) return -1;
    if (!firstFinish.has(write.finish.jid)) firstFinish.set(write.finish.jid, finishes.length);
    return finishes.push(write.finish) - 1;
  });
  const starts: StartedJob[] = [];
  for (const write of writes) {
    if (!('start' in write)) continue;
    const at = firstFinish.get(write.start.jid);
    const finish = at === undefined ? undefined : finishes[at];
    if (at !== undefined && finish && !finish.started)
      finishes[at] = { ...finish, started: write.start.started };
    else starts.push(write.start);
  }
  const stored = await repository.recordMany(starts, finishes);
  return writes.map((_, i) => {
    const at = finishOf[i] as number;
    return at < 0 || stored[at] === true;
  });
}
