import type { ClientScope } from '../access/client-scope.js';
import type { ScheduleDefinition, StoredSchedule } from './ports.js';

/** Who reads or writes schedules: their name and client scope (issue 28 §2). */
export interface ScheduleViewer {
  username: string;
  scope: Pick<ClientScope, 'limited' | 'has' | 'assertTargets'>;
}

/** The clients a schedule's targeting reaches now (MultiJobsService.targetIdsNow). */
export type ScheduleTargetsNow = (definition: ScheduleDefinition) => Promise<readonly string[]>;

/**
 * A schedule's targets resolve at each firing, so a scope is checked against what they reach now: a scoped
 * user sees a schedule whose every target is in their scope (one reaching no client now: only its creator),
 * and may not create or change one that reaches a client outside it. Each firing is checked again as its
 * creator (schedule-runs.ts).
 */
export class ScheduleScopes {
  constructor(private readonly targetsNow: ScheduleTargetsNow) {}

  /** Whether the viewer may see the schedule; without a viewer (or a limit) every schedule. */
  async visible(schedule: StoredSchedule, viewer: ScheduleViewer | undefined): Promise<boolean> {
    if (!viewer?.scope.limited) return true;
    const ids = await this.targetsNow(schedule.definition);
    if (ids.length === 0) return schedule.created_by === viewer.username;
    return ids.every((id) => viewer.scope.has(id));
  }

  /** 403 ERR_CLIENTS_OUT_OF_SCOPE naming the clients the definition reaches outside the viewer's scope. */
  async assertTargets(definition: ScheduleDefinition, viewer: ScheduleViewer | undefined): Promise<void> {
    if (!viewer?.scope.limited) return;
    viewer.scope.assertTargets(await this.targetsNow(definition), 'schedule');
  }
}
