/**
 * A test svcd (SQLite) whose schedules fire by a clock the test moves, with one alert rule, `schedules`, that
 * sends `schedule_failed` to a webhook; and a schedule that matches no client, fired once, so that its firing is
 * recorded failed and raises that alert.
 */
import { expect } from 'vitest';
import { OPERATOR, startTestServer, type TestServer } from '../../../../test-support/server.js';

export const asOperator = {
  auth: { basic: [OPERATOR.username, OPERATOR.password] as [string, string] },
};

export interface ScheduleClock {
  at: number;
  now(): Date;
}

export interface ScheduleAlertServer {
  t: TestServer;
  clock: ScheduleClock;
}

export async function startScheduleAlertServer(
  webhook: { url: string; secret: string },
  more: { alerts?: Record<string, unknown>; api?: Record<string, unknown> } = {},
): Promise<ScheduleAlertServer> {
  const clock: ScheduleClock = { at: Date.parse('2030-03-04T10:00:30Z'), now: () => new Date(clock.at) };
  const t = await startTestServer({
    store: 'database:sqlite',
    ...(more.api ? { api: more.api } : {}),
    sections: {
      schedules: { catch_up_delay: 0 },
      alerts: { ...more.alerts, rules: [{ name: 'schedules', event: 'schedule_failed', webhook }] },
    },
    tuning: { scheduleClock: clock },
  });
  return { t, clock };
}

/** Creates a schedule no client matches and fires it once; its firing is recorded failed. */
export async function fireFailingSchedule({
  t,
  clock,
}: ScheduleAlertServer): Promise<{ id: string; next_run_at: string }> {
  const created = await t.api.post(
    '/schedules',
    {
      name: 'nobody',
      schedule: '* * * * *',
      type: 'command',
      command: 'id',
      tags: { tags: ['no-such-tag'] },
    },
    asOperator,
  );
  expect(created.status, created.text).toBe(201);
  const schedule = created.json.data as { id: string; next_run_at: string };
  clock.at = Date.parse(schedule.next_run_at) + 150;
  expect(await t.server.tickSchedules()).toBe(1);
  return schedule;
}
