/**
 * The schedule form's body (POST/PUT /schedules) checked against the protocol's own schema, and a schedule as svcd
 * returns it read back into the form unchanged.
 */
import { describe, expect, test } from 'vitest';
import { scheduleBodySchema } from '@svc/protocol';
import type { Schedule } from '../src/api/schedules.js';
import {
  emptyScheduleForm,
  formOfSchedule,
  scheduleBody,
  type ScheduleForm,
} from '../src/lib/schedule-form.js';

const form = (over: Partial<ScheduleForm>): ScheduleForm => ({ ...emptyScheduleForm(), name: 'n', ...over });

describe('schedule form', () => {
  test('a command on tags: the body svcd validates, options left out stay out', () => {
    const body = scheduleBody(
      form({
        command: 'uptime',
        timezone: 'Europe/Berlin',
        targets: { ...emptyScheduleForm().targets, kind: 'tags', tags: 'web, db', operator: 'AND' },
      }),
    );
    expect(body).toEqual({
      name: 'n',
      schedule: '0 3 * * *',
      timezone: 'Europe/Berlin',
      type: 'command',
      command: 'uptime',
      tags: { operator: 'AND', tags: ['web', 'db'] },
      execute_concurrently: true,
      abort_on_error: false,
      overlaps: false,
    });
    expect(scheduleBodySchema.safeParse(body).success).toBe(true);
  });

  test('a typed script goes as base64 (UTF-8), a library script by id, with the options given', () => {
    const typed = scheduleBody(form({ source: 'script', script: 'echo ü\n', targets: ids('a') }));
    expect(typed.type).toBe('script');
    expect(typed.script).toBe(Buffer.from('echo ü\n').toString('base64'));
    const library = scheduleBody(
      form({
        source: 'library',
        scriptId: 'lib-1',
        timeoutSec: 30,
        cwd: '/tmp',
        isSudo: true,
        targets: ids('a'),
      }),
    );
    expect(library).toMatchObject({
      type: 'script',
      script_id: 'lib-1',
      timeout_sec: 30,
      cwd: '/tmp',
      is_sudo: true,
    });
    expect(library).not.toHaveProperty('script');
    for (const body of [typed, library]) expect(scheduleBodySchema.safeParse(body).success).toBe(true);
  });

  test('a schedule read back gives the form it was made from', () => {
    const made = form({
      source: 'script',
      script: '#!/bin/sh\necho hi\n',
      interpreter: 'sh',
      timeoutSec: 90,
      overlaps: true,
      targets: ids('a, b', 'g1'),
    });
    const body = scheduleBody(made);
    const schedule = {
      ...(body as object),
      id: 's1',
      command: '',
      script_id: null,
      cwd: null,
      is_sudo: null,
      client_ids: ['a', 'b'],
      group_ids: ['g1'],
      tags: null,
      labels: null,
    } as unknown as Schedule;
    expect(formOfSchedule(schedule)).toEqual(made);
  });
});

function ids(clientIds: string, groupIds = ''): ScheduleForm['targets'] {
  return { ...emptyScheduleForm().targets, clientIds, groupIds };
}
