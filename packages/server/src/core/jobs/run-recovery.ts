import { randomUUID } from 'node:crypto';
import type { Job, MultiJobSummary } from '@svc/protocol';
import type { Clock } from '../auth/ports.js';
import { failedOutcome, newJob } from './jobs-service.js';
import type { TargetClients } from './multi-job-ports.js';
import { MAX_JOBS_PER_INSERT, type JobRepository } from './ports.js';

export const INTERRUPTED =
  'not started: svcd stopped (it was killed or crashed) before it reached this client';
export const coordinatorLost = (nodeId: string) =>
  `not started: svcd node '${nodeId}', which coordinated this run, stopped (killed or cut off from the cluster) before it reached this client`;
/** Why a child sent by a coordinator that stopped before recording its agent's answer is presumed unknown. */
export const startNotRecorded = (nodeId: string | null) =>
  `no start record: ${nodeId === null ? 'svcd' : `svcd node '${nodeId}', which coordinated this run,`} stopped (killed or cut off) before it recorded whether the client started this job (presumed unknown; a result the client still sends replaces this)`;
export const STAGED_INTERRUPTED =
  'not started: svcd stopped (it was killed or crashed) during the staged run; ' +
  'POST /commands/{jid}/rerun?only=failed continues it';

interface RecoveryDeps {
  jobs: JobRepository;
  clients: TargetClients;
  clock: Clock;
}

/** Inserts a child ended `status` saying `reason` for every target of the run that has no child job yet. */
export async function recordNotStarted(
  deps: RecoveryDeps,
  run: MultiJobSummary,
  targetIds: readonly string[],
  reason: string,
  status: 'failed' | 'skipped' = 'failed',
): Promise<void> {
  const reached = new Set(await deps.jobs.childClientIds(run.jid));
  const missing = targetIds.filter((id) => !reached.has(id));
  const now = deps.clock.now();
  const outcome = failedOutcome(reason, now);
  for (let at = 0; at < missing.length; at += MAX_JOBS_PER_INSERT) {
    const children = missing.slice(at, at + MAX_JOBS_PER_INSERT).map((clientId): Job => ({
      ...newJob(
        randomUUID(),
        {
          clientId,
          clientName: deps.clients.get(clientId)?.name ?? '',
          createdBy: run.created_by,
          shownCommand: run.command,
        },
        {
          command: run.command,
          interpreter: run.interpreter,
          cwd: run.cwd,
          is_sudo: run.is_sudo,
          timeout_sec: run.timeout_sec,
          ...(run.is_script ? { script: '' } : {}),
        },
        now,
      ),
      multi_job_id: run.jid,
      status,
      finished_at: outcome.finished_at,
      error: reason,
    }));
    await deps.jobs.insertMany(children);
  }
}
