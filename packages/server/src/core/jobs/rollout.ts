import { resolveShare, type MultiJobSummary, type RolloutProgress } from '@svc/protocol';
import type { StagedRun } from './multi-job-runner.js';
import type { MultiJobRepository, StoredMultiJob } from './multi-job-ports.js';
import type { JobRepository, JobStatusCounts } from './ports.js';

/** The jobs of a staged run max_failures counts: those that ended failed or unknown. */
const failuresIn = (counts: JobStatusCounts): number => counts.failed + counts.unknown;

/** A staged run's batches resolved against its `targets`, reporting progress to the run's record. */
export function stagedRun(
  run: MultiJobSummary,
  targets: number,
  jobs: Pick<JobRepository, 'countByMultiJob'>,
  multiJobs: Pick<MultiJobRepository, 'saveRollout'>,
): StagedRun {
  return {
    batchSize: resolveShare(run.batch_size ?? targets, targets),
    delayMs: (run.batch_delay ?? 0) * 1000,
    maxFailures: run.max_failures === undefined ? null : resolveShare(run.max_failures, targets),
    failures: async () => failuresIn(await jobs.countByMultiJob(run.jid)),
    progress: (state) => multiJobs.saveRollout(run.jid, state),
  };
}

/** GET /commands/{jid}'s view of a staged run; undefined for a run without batch_size. */
export function rolloutProgress(
  stored: StoredMultiJob,
  counts: JobStatusCounts,
): RolloutProgress | undefined {
  const { summary, rollout } = stored;
  if (summary.batch_size === undefined || !rollout) return undefined;
  const targets = stored.targetCount ?? 0;
  const batchSize = resolveShare(summary.batch_size, targets);
  return {
    batch_size: batchSize,
    batch_delay_sec: summary.batch_delay ?? 0,
    max_failures: summary.max_failures === undefined ? null : resolveShare(summary.max_failures, targets),
    batches_total: Math.ceil(targets / batchSize),
    batches_done: rollout.batchesDone,
    next_batch_at: rollout.nextBatchAt?.toISOString() ?? null,
    failures: failuresIn(counts),
    stopped: rollout.stopReason,
  };
}
