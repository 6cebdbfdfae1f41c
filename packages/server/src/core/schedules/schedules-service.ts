import { randomUUID } from 'node:crypto';
import {
  SCHEDULE_HISTORY_LENGTH,
  type FiringCounts,
  type ListQuery,
  type Schedule,
  type ScheduleBody,
  type ScheduleFiring,
} from '@svc/protocol';
import type { Clock } from '../auth/ports.js';
import { CronSyntaxError, parseCron } from './cron.js';
import { isTimeZone, nextFiring } from './next-firing.js';
import type { ScheduleDefinition, ScheduleRepository, StoredFiring, StoredSchedule } from './ports.js';
import { scheduleErrors } from './schedule-errors.js';
import type { ScheduleRuns } from './schedule-runs.js';
import { runOptionsOf } from './run-options.js';
import { ScheduleScopes, type ScheduleViewer } from './schedule-scope.js';

/** Without target resolution (tests of other parts) a schedule reaches no client now. */
const NO_TARGETS = new ScheduleScopes(() => Promise.resolve([]));

const DEFAULTS = { timeout_sec: 60, cwd: '', is_sudo: false, interpreter: '' };

/** The first firing after `now`; throws a 400 for a cron expression or time zone svcd cannot use. */
function firstFiring(definition: ScheduleDefinition, now: Date): Date {
  if (!isTimeZone(definition.timezone)) throw scheduleErrors.badTimeZone(definition.timezone);
  let cron;
  try {
    cron = parseCron(definition.schedule);
  } catch (err) {
    if (err instanceof CronSyntaxError) throw scheduleErrors.badCron(err.message);
    throw err;
  }
  const next = nextFiring(cron, definition.timezone, now);
  if (!next) throw scheduleErrors.neverFires(definition.schedule);
  return next;
}

/** What is stored: a command or inline script gets the defaults; a library script keeps only what was given. */
function definitionOf(body: ScheduleBody): ScheduleDefinition {
  const { name: _name, ...definition } = body;
  if (definition.script_id !== undefined) return definition;
  return { ...DEFAULTS, ...definition };
}

/**
 * The schedules API (OpenRPort's /schedules): create, read, replace, delete, list, and each schedule's firings
 * with the state of the runs they started. Firing itself is the Scheduler's. With a `viewer` whose client
 * scope is limited, schedules outside it are unknown (404) and not listed, and targets outside it are refused
 * (see ScheduleScopes).
 */
export class SchedulesService {
  constructor(
    private readonly repository: ScheduleRepository,
    private readonly runs: ScheduleRuns,
    private readonly clock: Clock,
    private readonly scopes: ScheduleScopes = NO_TARGETS,
  ) {}

  async create(body: ScheduleBody, createdBy: string, viewer?: ScheduleViewer): Promise<Schedule> {
    const definition = definitionOf(body);
    await this.scopes.assertTargets(definition, viewer);
    // Read after the checks, right before the write: a minute's tick running meanwhile must not miss its firing.
    const now = this.clock.now();
    const schedule: StoredSchedule = {
      id: randomUUID(),
      name: body.name,
      definition,
      created_by: createdBy,
      created_at: now,
      updated_by: createdBy,
      updated_at: now,
      next_run_at: firstFiring(definition, now),
    };
    await this.repository.insert(schedule);
    return this.view(schedule);
  }

  async get(id: string, viewer?: ScheduleViewer): Promise<Schedule> {
    return this.view(await this.stored(id, viewer));
  }

  /** Replaces the whole schedule; the next firing is computed afresh from now. */
  async replace(
    id: string,
    body: ScheduleBody,
    updatedBy: string,
    viewer?: ScheduleViewer,
  ): Promise<Schedule> {
    const current = await this.stored(id, viewer);
    const definition = definitionOf(body);
    await this.scopes.assertTargets(definition, viewer);
    const now = this.clock.now();
    const next: StoredSchedule = {
      ...current,
      name: body.name,
      definition,
      updated_by: updatedBy,
      updated_at: now,
      next_run_at: firstFiring(definition, now),
    };
    if (!(await this.repository.replace(next))) throw scheduleErrors.notFound(id);
    return this.view(next);
  }

  async delete(id: string, viewer?: ScheduleViewer): Promise<void> {
    if (viewer?.scope.limited) await this.stored(id, viewer);
    if (!(await this.repository.delete(id))) throw scheduleErrors.notFound(id);
  }

  async list(query: ListQuery, viewer?: ScheduleViewer): Promise<{ data: Schedule[]; count: number }> {
    if (!viewer?.scope.limited) {
      const { data, count } = await this.repository.list(query);
      return { data: await Promise.all(data.map((s) => this.view(s))), count };
    }
    // Filtered by what each schedule reaches now, so the page is cut after filtering (schedules are few).
    const { data: all } = await this.repository.list({ sort: query.sort, filters: query.filters });
    const shown: StoredSchedule[] = [];
    for (const s of all) if (await this.scopes.visible(s, viewer)) shown.push(s);
    const from = query.page?.offset ?? 0;
    const page = query.page ? shown.slice(from, from + query.page.limit) : shown;
    return { data: await Promise.all(page.map((s) => this.view(s))), count: shown.length };
  }

  /** The newest firings first, each with its run's state, and every firing counted by outcome. */
  async firings(
    id: string,
    viewer?: ScheduleViewer,
  ): Promise<{ data: ScheduleFiring[]; outcomes: FiringCounts }> {
    await this.stored(id, viewer);
    const [firings, outcomes] = await Promise.all([
      this.repository.firings(id, SCHEDULE_HISTORY_LENGTH),
      this.repository.firingCounts(id),
    ]);
    return { data: await Promise.all(firings.map((f) => this.firingView(f))), outcomes };
  }

  /** 404 for an unknown schedule, and for one outside the viewer's client scope. */
  private async stored(id: string, viewer?: ScheduleViewer): Promise<StoredSchedule> {
    const found = await this.repository.get(id);
    if (!found || !(await this.scopes.visible(found, viewer))) throw scheduleErrors.notFound(id);
    return found;
  }

  private async firingView(firing: StoredFiring): Promise<ScheduleFiring> {
    const state = firing.jid ? await this.runs.state(firing.jid) : undefined;
    return {
      scheduled_at: firing.scheduled_at.toISOString(),
      fired_at: firing.fired_at.toISOString(),
      outcome: firing.outcome,
      reason: firing.reason,
      jid: firing.jid,
      status: state?.status ?? null,
      client_count: state?.client_count ?? null,
      jobs: state?.jobs ?? null,
    };
  }

  private async lastExecution(id: string): Promise<Schedule['last_execution']> {
    const [last] = await this.repository.firings(id, 1);
    if (!last) return null;
    const firing = await this.firingView(last);
    const clients = firing.client_count ?? 0;
    const successes = firing.jobs?.successful ?? 0;
    const summary =
      firing.outcome !== 'started'
        ? firing.reason
        : firing.status === 'running'
          ? `running: ${clients - (firing.jobs?.running ?? 0)} of ${clients} clients finished`
          : `${successes} of ${clients} clients successful`;
    return {
      started_at: firing.fired_at,
      jid: firing.jid,
      outcome: firing.outcome,
      status: firing.status ?? firing.outcome,
      client_count: clients,
      success_count: successes,
      summary,
    };
  }

  private async view(s: StoredSchedule): Promise<Schedule> {
    const d = s.definition;
    return {
      id: s.id,
      name: s.name,
      schedule: d.schedule,
      timezone: d.timezone,
      type: d.type,
      client_ids: d.client_ids?.length ? d.client_ids : null,
      group_ids: d.group_ids?.length ? d.group_ids : null,
      tags: d.tags ?? null,
      labels: d.labels ?? null,
      command: d.command ?? '',
      script: d.script ?? '',
      script_id: d.script_id ?? null,
      interpreter: d.interpreter ?? null,
      cwd: d.cwd ?? null,
      is_sudo: d.is_sudo ?? null,
      timeout_sec: d.timeout_sec ?? null,
      execute_concurrently: d.execute_concurrently,
      abort_on_error: d.abort_on_error,
      overlaps: d.overlaps,
      env: d.env ?? null,
      ...runOptionsOf(d),
      created_at: s.created_at.toISOString(),
      created_by: s.created_by,
      updated_at: s.updated_at.toISOString(),
      updated_by: s.updated_by,
      next_run_at: s.next_run_at?.toISOString() ?? null,
      last_execution: await this.lastExecution(s.id),
    };
  }
}
