/**
 * POST /commands/{jid}/rerun: which clients of a finished (or running) run run again, and the request that
 * repeats the run's options on them.
 */
import {
  AppError,
  ERROR_CODES,
  type Job,
  type MultiCommandBody,
  type MultiJobSummary,
  type MultiScriptBody,
  type RerunSelection,
} from '@svc/protocol';

/**
 * The statuses of a child that did not succeed: it failed, its outcome is unknown, or a staged run stopped
 * before it (skipped); running ones not yet.
 */
export const RERUN_STATUSES: readonly Job['status'][] = ['failed', 'unknown', 'skipped'];

export const didNotSucceed = (job: Pick<Job, 'status'>): boolean => RERUN_STATUSES.includes(job.status);

/** The client ids to run again, each once, in the order the run reached them. */
export function rerunClientIds(children: readonly Pick<Job, 'client_id' | 'status'>[], only: RerunSelection) {
  const ids = new Set<string>();
  for (const child of children) if (only === 'all' || didNotSucceed(child)) ids.add(child.client_id);
  return [...ids];
}

export const nothingToRerun = (jid: string, only: RerunSelection): AppError =>
  only === 'failed'
    ? new AppError(
        'conflict',
        ERROR_CODES.nothingToRerun,
        `Nothing failed in run '${jid}'`,
        'no child job of this run failed or ended unknown; use only=all to run it again on every client',
      )
    : new AppError(
        'conflict',
        ERROR_CODES.nothingToRerun,
        `Run '${jid}' has no client to run again`,
        'none of its targets has a job yet, or none of them is a known client any more',
      );

export const envNotKept = (jid: string, names: readonly string[]): AppError =>
  new AppError(
    'conflict',
    ERROR_CODES.rerunEnvNotKept,
    `Run '${jid}' cannot be run again: its env had plain values (${names.join(', ')}), which svcd does not keep`,
    'start a new run with POST /commands or POST /scripts and give env again (vault references are kept and rerun)',
  );

/**
 * The body of a new run with the options of `run`, on `clientIds`, its env's vault references included. A script
 * run repeats its text.
 */
export function rerunBody(
  run: MultiJobSummary,
  clientIds: string[],
): { command: MultiCommandBody } | { script: MultiScriptBody } {
  const common = {
    client_ids: clientIds,
    group_ids: null,
    tags: null,
    labels: null,
    cwd: run.cwd,
    interpreter: run.interpreter,
    is_sudo: run.is_sudo,
    timeout_sec: run.timeout_sec,
    execute_concurrently: run.concurrent,
    abort_on_error: run.abort_on_err,
    ...(run.queue_ttl === undefined ? {} : { queue_ttl: run.queue_ttl }),
    ...(run.timeout_kill === undefined ? {} : { timeout_kill: run.timeout_kill }),
    ...(run.batch_size === undefined ? {} : { batch_size: run.batch_size }),
    ...(run.batch_delay === undefined ? {} : { batch_delay: run.batch_delay }),
    ...(run.max_failures === undefined ? {} : { max_failures: run.max_failures }),
    // Vault references only (a run with plain env values is not rerun): resolved again at dispatch.
    ...(run.env === undefined ? {} : { env: { ...run.env } }),
  };
  return run.is_script
    ? { script: { ...common, script: Buffer.from(run.command, 'utf8').toString('base64') } }
    : { command: { ...common, command: run.command } };
}
