import { AppError, ERROR_CODES, isAppError, isVaultReference, type JobStatus } from '@svc/protocol';
import type { RunRequester } from '../jobs/run-env.js';
import type { JobStatusCounts } from '../jobs/ports.js';
import type { MultiJobsService, RunLink } from '../jobs/multi-jobs-service.js';
import type { UserAccess } from '../access/access-control.js';
import type { LibraryService } from '../library/library-service.js';
import type { StoredSchedule } from './ports.js';
import { runOptionsOf } from './run-options.js';

/** A started run's state, as a schedule's history shows it. */
export interface RunState {
  status: JobStatus;
  /** Clients with a job so far. */
  client_count: number;
  jobs: JobStatusCounts;
}

/** How a schedule's firing becomes a run: a normal multi-client run linked to the schedule. */
export interface ScheduleRuns {
  /** Resolves the targets now and starts the run; throws an AppError saying why it could not start. */
  start(schedule: StoredSchedule): Promise<{ jid: string }>;
  /** Undefined when the run is not known (any more). */
  state(jid: string): Promise<RunState | undefined>;
}

const DEFAULTS = { timeout_sec: 60, cwd: '', is_sudo: false, interpreter: '' };

/** The user a schedule runs as, for its vault references; undefined when there is no such user (any more). */
export type ScheduleOwners = (username: string) => Promise<RunRequester | undefined>;

const ownerGone = (username: string) =>
  new AppError(
    'invalid',
    ERROR_CODES.invalidRequest,
    `The schedule's owner '${username}' does not exist any more, so its vault references cannot be resolved`,
  );

/**
 * Runs through the multi-client jobs service; a library script's text and options are read at each firing, and
 * the vault references in env are resolved then too, with the rights of the schedule's owner (its creator).
 * `accessOf` gives the creator's client scope and restrictions (issue 28), checked at each firing, so a run that
 * would now reach a client outside the creator's scope (or a command their groups no longer allow) is refused.
 */
export function multiJobScheduleRuns(
  multi: MultiJobsService,
  library: LibraryService,
  owners?: ScheduleOwners,
  accessOf: (username: string) => Promise<UserAccess | undefined> = () => Promise.resolve(undefined),
): ScheduleRuns {
  return {
    async start(schedule) {
      const d = schedule.definition;
      const by = schedule.created_by;
      const needsOwner = Object.values(d.env ?? {}).some(isVaultReference);
      const requester = needsOwner && owners ? await owners(by) : undefined;
      if (needsOwner && !requester) throw ownerGone(by);
      const given = {
        ...(d.timeout_sec === undefined ? {} : { timeout_sec: d.timeout_sec }),
        ...(d.cwd === undefined ? {} : { cwd: d.cwd }),
        ...(d.is_sudo === undefined ? {} : { is_sudo: d.is_sudo }),
        ...(d.interpreter === undefined ? {} : { interpreter: d.interpreter }),
      };
      const targeting = {
        client_ids: d.client_ids,
        group_ids: d.group_ids,
        tags: d.tags,
        labels: d.labels,
        execute_concurrently: d.execute_concurrently,
        abort_on_error: d.abort_on_error,
        ...(d.env === undefined ? {} : { env: d.env }),
        ...runOptionsOf(d),
      };
      const access = await accessOf(by);
      const link: RunLink = {
        scheduleId: schedule.id,
        ...(requester ? { requester } : {}),
        ...(access ? { check: (run) => access.assertRun(run) } : {}),
      };
      if (d.type === 'command')
        return multi.runCommand(
          { ...targeting, ...DEFAULTS, ...given, command: d.command ?? '' },
          by,
          undefined,
          link,
        );
      const script =
        d.script_id === undefined
          ? { ...DEFAULTS, ...given, script: d.script ?? '' }
          : await library.runOf({ script_id: d.script_id, ...given });
      return multi.runScript({ ...targeting, ...script }, by, undefined, link);
    },

    async state(jid) {
      try {
        const { job, counts } = await multi.get(jid, false, false);
        const clients = Object.values(counts).reduce((a, b) => a + b, 0);
        return { status: job.status, client_count: clients, jobs: counts };
      } catch (err) {
        if (isAppError(err) && err.kind === 'not_found') return undefined;
        throw err;
      }
    },
  };
}
