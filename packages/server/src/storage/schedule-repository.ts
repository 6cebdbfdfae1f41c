import type { Selectable } from 'kysely';
import { FIRING_OUTCOMES, type FiringCounts, type ListQuery } from '@svc/protocol';
import type {
  FiringClaim,
  ScheduleDefinition,
  ScheduleRepository,
  StoredFiring,
  StoredSchedule,
} from '../core/schedules/ports.js';
import type { Database } from './database.js';
import { isUniqueViolation, withStorageErrors } from './errors.js';
import { executeSqlList, type SqlColumnMap } from './list-query-sql.js';
import type { ScheduleFiringsTable, SchedulesTable } from './schema.js';

const COLUMNS: SqlColumnMap = {
  id: { column: 'id', notNull: true },
  name: { column: 'name', notNull: true },
  created_by: { column: 'created_by', notNull: true },
  created_at: { column: 'created_at', type: 'time', notNull: true },
  updated_at: { column: 'updated_at', type: 'time', notNull: true },
  next_run_at: { column: 'next_run_at', type: 'number' },
};

const time = (value: number | string | null): Date | null =>
  value === null ? null : new Date(Number(value));

function toSchedule(row: Selectable<SchedulesTable>): StoredSchedule {
  return {
    id: row.id,
    name: row.name,
    definition: JSON.parse(row.definition) as ScheduleDefinition,
    created_by: row.created_by,
    created_at: new Date(Number(row.created_at)),
    updated_by: row.updated_by,
    updated_at: new Date(Number(row.updated_at)),
    next_run_at: time(row.next_run_at),
  };
}

function toFiring(row: Selectable<ScheduleFiringsTable>): StoredFiring {
  return {
    schedule_id: row.schedule_id,
    scheduled_at: new Date(Number(row.scheduled_at)),
    fired_at: new Date(Number(row.fired_at)),
    outcome: row.outcome as StoredFiring['outcome'],
    reason: row.reason,
    jid: row.jid,
  };
}

/** Rows per INSERT of firings (6 parameters each; well under every engine's limit). */
const FIRING_ROWS = 500;

const firingRow = (firing: StoredFiring) => ({
  schedule_id: firing.schedule_id,
  scheduled_at: firing.scheduled_at.getTime(),
  fired_at: firing.fired_at.getTime(),
  outcome: firing.outcome,
  reason: firing.reason.slice(0, 1000),
  jid: firing.jid,
});

const changeable = (schedule: StoredSchedule) => ({
  name: schedule.name,
  definition: JSON.stringify(schedule.definition),
  updated_by: schedule.updated_by,
  updated_at: schedule.updated_at.getTime(),
  next_run_at: schedule.next_run_at?.getTime() ?? null,
});

/** Schedules and their firings in `schedules` and `schedule_firings` (migration 015_schedules). */
export class SqlScheduleRepository implements ScheduleRepository {
  constructor(private readonly database: Database) {}

  insert(schedule: StoredSchedule): Promise<void> {
    return withStorageErrors(async () => {
      await this.database.db
        .insertInto('schedules')
        .values({
          id: schedule.id,
          ...changeable(schedule),
          created_by: schedule.created_by,
          created_at: schedule.created_at.getTime(),
        })
        .execute();
    });
  }

  get(id: string): Promise<StoredSchedule | undefined> {
    return withStorageErrors(async () => {
      const row = await this.database.db
        .selectFrom('schedules')
        .selectAll()
        .where('id', '=', id)
        .executeTakeFirst();
      return row ? toSchedule(row) : undefined;
    });
  }

  replace(schedule: StoredSchedule): Promise<boolean> {
    return withStorageErrors(async () => {
      const result = await this.database.db
        .updateTable('schedules')
        .set(changeable(schedule))
        .where('id', '=', schedule.id)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    });
  }

  delete(id: string): Promise<boolean> {
    return withStorageErrors(() =>
      this.database.db.transaction().execute(async (trx) => {
        await trx.deleteFrom('schedule_firings').where('schedule_id', '=', id).execute();
        const result = await trx.deleteFrom('schedules').where('id', '=', id).executeTakeFirst();
        return Number(result.numDeletedRows) === 1;
      }),
    );
  }

  list(query: ListQuery): Promise<{ data: StoredSchedule[]; count: number }> {
    return withStorageErrors(async () => {
      const base = this.database.db.selectFrom('schedules').selectAll();
      const { rows, count } = await executeSqlList(base, query, COLUMNS, { tieBreaker: 'id' });
      return { data: rows.map(toSchedule), count };
    });
  }

  due(now: Date, limit: number): Promise<StoredSchedule[]> {
    return withStorageErrors(async () => {
      const rows = await this.database.db
        .selectFrom('schedules')
        .selectAll()
        .where('next_run_at', '<=', now.getTime())
        .orderBy('next_run_at')
        .orderBy('id')
        .limit(limit)
        .execute();
      return rows.map(toSchedule);
    });
  }

  claim(claims: readonly FiringClaim[]): Promise<Set<string>> {
    // In id order, so nodes claiming overlapping sets lock rows in the same order.
    const ordered = [...claims].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return withStorageErrors(() =>
      this.database.db.transaction().execute(async (trx) => {
        const won = new Set<string>();
        for (const { id, expected, next } of ordered) {
          const result = await trx
            .updateTable('schedules')
            .set({ next_run_at: next?.getTime() ?? null })
            .where('id', '=', id)
            .where('next_run_at', '=', expected.getTime())
            .executeTakeFirst();
          if (Number(result.numUpdatedRows) === 1) won.add(id);
        }
        return won;
      }),
    );
  }

  recordFirings(firings: readonly StoredFiring[]): Promise<void> {
    return withStorageErrors(async () => {
      for (let i = 0; i < firings.length; i += FIRING_ROWS) {
        const rows = firings.slice(i, i + FIRING_ROWS).map(firingRow);
        try {
          await this.database.db.insertInto('schedule_firings').values(rows).execute();
        } catch (err) {
          if (!isUniqueViolation(err)) throw err;
          // Some minute is recorded already (the claim let one caller fire it): keep that record, add the rest.
          for (const row of rows)
            await this.database.db
              .insertInto('schedule_firings')
              .values(row)
              .execute()
              .catch((e: unknown) => {
                if (!isUniqueViolation(e)) throw e;
              });
        }
      }
    });
  }

  firings(scheduleId: string, limit: number): Promise<StoredFiring[]> {
    return withStorageErrors(async () => {
      const rows = await this.database.db
        .selectFrom('schedule_firings')
        .selectAll()
        .where('schedule_id', '=', scheduleId)
        .orderBy('scheduled_at', 'desc')
        .limit(limit)
        .execute();
      return rows.map(toFiring);
    });
  }

  lastStarted(scheduleId: string): Promise<StoredFiring | undefined> {
    return withStorageErrors(async () => {
      const row = await this.database.db
        .selectFrom('schedule_firings')
        .selectAll()
        .where('schedule_id', '=', scheduleId)
        .where('outcome', '=', 'started')
        .orderBy('scheduled_at', 'desc')
        .limit(1)
        .executeTakeFirst();
      return row ? toFiring(row) : undefined;
    });
  }

  firingCounts(scheduleId: string): Promise<FiringCounts> {
    return withStorageErrors(async () => {
      const rows = await this.database.db
        .selectFrom('schedule_firings')
        .select(['outcome', (eb) => eb.fn.countAll<number | string>().as('n')])
        .where('schedule_id', '=', scheduleId)
        .groupBy('outcome')
        .execute();
      const counts = Object.fromEntries(FIRING_OUTCOMES.map((o) => [o, 0])) as FiringCounts;
      for (const row of rows)
        if ((FIRING_OUTCOMES as readonly string[]).includes(row.outcome))
          counts[row.outcome as keyof FiringCounts] = Number(row.n);
      return counts;
    });
  }
}
