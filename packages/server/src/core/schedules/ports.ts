import type { FiringCounts, ListQuery, ScheduleBody } from '@svc/protocol';

/** What a schedule runs and on which clients: the request body as validated (PUT replaces all of it). */
export type ScheduleDefinition = Omit<ScheduleBody, 'name'>;

/** A schedule as stored. */
export interface StoredSchedule {
  id: string;
  name: string;
  definition: ScheduleDefinition;
  created_by: string;
  created_at: Date;
  updated_by: string;
  updated_at: Date;
  /** The firing still to come; null when the expression never fires again. */
  next_run_at: Date | null;
}

/** One firing as stored (its run's state is read from the run itself). */
export interface StoredFiring {
  schedule_id: string;
  scheduled_at: Date;
  fired_at: Date;
  outcome: 'started' | 'skipped' | 'missed' | 'failed';
  reason: string;
  jid: string | null;
}

/** A due schedule's firing to take: its next_run_at as read, and the one after now. */
export interface FiringClaim {
  id: string;
  expected: Date;
  next: Date | null;
}

/** Persistence of schedules and their firings. */
export interface ScheduleRepository {
  insert(schedule: StoredSchedule): Promise<void>;
  get(id: string): Promise<StoredSchedule | undefined>;
  /** Replaces name, definition, updated_* and next_run_at; false for an unknown id. */
  replace(schedule: StoredSchedule): Promise<boolean>;
  /** Deletes the schedule and its firings (its runs stay); false for an unknown id. */
  delete(id: string): Promise<boolean>;
  list(query: ListQuery): Promise<{ data: StoredSchedule[]; count: number }>;
  /** Schedules whose next_run_at is at or before `now`, earliest first, at most `limit`. */
  due(now: Date, limit: number): Promise<StoredSchedule[]>;
  /**
   * For each claim, moves next_run_at from `expected` to `next` only if it is still `expected` (a conditional
   * UPDATE; all in one transaction). Resolves with the ids whose row this call changed: the one caller (of any node
   * sharing the database) that gets an id owns that firing.
   */
  claim(claims: readonly FiringClaim[]): Promise<Set<string>>;
  /** Records firings; a minute already recorded for a schedule is kept as it is. */
  recordFirings(firings: readonly StoredFiring[]): Promise<void>;
  /** The newest firings first. */
  firings(scheduleId: string, limit: number): Promise<StoredFiring[]>;
  /** The newest firing that started a run. */
  lastStarted(scheduleId: string): Promise<StoredFiring | undefined>;
  firingCounts(scheduleId: string): Promise<FiringCounts>;
}
