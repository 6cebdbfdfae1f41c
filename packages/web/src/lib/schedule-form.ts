/**
 * The create/edit form of a schedule: its state, the state an existing schedule gives, and the POST/PUT body it
 * sends. Cron and time zone are checked by svcd (it names the wrong field); the form only sends them.
 */
import type { Schedule } from '../api/schedules.js';
import { targetingBody, toBase64, type RunWhat, type ScriptSource, type Targets } from './run-compose.js';
import { noStaging, stagedBody, stagedOf } from './staged-run.js';

/** The run fields shared with the run form, and the schedule's own: when, sudo, overlaps, where. */
export interface ScheduleForm extends RunWhat {
  name: string;
  cron: string;
  timezone: string;
  isSudo: boolean;
  overlaps: boolean;
  targets: Targets;
}

/** The browser's IANA time zone (what a new schedule defaults to). */
export const browserTimeZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

export function emptyScheduleForm(): ScheduleForm {
  return {
    name: '',
    cron: '0 3 * * *',
    timezone: browserTimeZone(),
    source: 'command',
    command: '',
    script: '#!/bin/sh\n',
    scriptId: '',
    interpreter: '',
    cwd: '',
    timeoutSec: '',
    isSudo: false,
    concurrent: true,
    abortOnError: false,
    overlaps: false,
    staged: noStaging(),
    targets: { kind: 'ids', clientIds: '', groupIds: '', tags: '', labels: '', operator: 'OR' },
  };
}

/** base64 → UTF-8 text ('' when it is not base64). */
export function fromBase64(value: string): string {
  try {
    return new TextDecoder().decode(Uint8Array.from(atob(value), (c) => c.charCodeAt(0)));
  } catch {
    return '';
  }
}

export function formOfSchedule(s: Schedule): ScheduleForm {
  const source: ScriptSource = s.type === 'command' ? 'command' : s.script_id ? 'library' : 'script';
  const targets: Targets = s.tags
    ? {
        ...emptyScheduleForm().targets,
        kind: 'tags',
        tags: s.tags.tags.join(', '),
        operator: s.tags.operator,
      }
    : s.labels
      ? {
          ...emptyScheduleForm().targets,
          kind: 'labels',
          labels: s.labels.labels.join(', '),
          operator: s.labels.operator,
        }
      : {
          ...emptyScheduleForm().targets,
          clientIds: (s.client_ids ?? []).join(', '),
          groupIds: (s.group_ids ?? []).join(', '),
        };
  return {
    name: s.name,
    cron: s.schedule,
    timezone: s.timezone,
    source,
    command: s.command,
    script: source === 'script' ? fromBase64(s.script) : '#!/bin/sh\n',
    scriptId: s.script_id ?? '',
    interpreter: s.interpreter ?? '',
    cwd: s.cwd ?? '',
    timeoutSec: s.timeout_sec ?? '',
    isSudo: s.is_sudo ?? false,
    concurrent: s.execute_concurrently,
    abortOnError: s.abort_on_error,
    overlaps: s.overlaps,
    staged: stagedOf(s),
    targets,
  };
}

/** The body of POST /schedules and PUT /schedules/{id}; targeting left empty is left out (svcd says so). */
export function scheduleBody(form: ScheduleForm): Record<string, unknown> {
  const what =
    form.source === 'command'
      ? { type: 'command', command: form.command }
      : form.source === 'script'
        ? { type: 'script', script: toBase64(form.script) }
        : { type: 'script', script_id: form.scriptId };
  const timeout = Number(form.timeoutSec);
  return {
    name: form.name,
    schedule: form.cron.trim(),
    timezone: form.timezone.trim() || 'UTC',
    ...what,
    ...(form.interpreter ? { interpreter: form.interpreter } : {}),
    ...(form.cwd ? { cwd: form.cwd } : {}),
    ...(form.timeoutSec !== '' && Number.isInteger(timeout) && timeout > 0 ? { timeout_sec: timeout } : {}),
    ...(form.isSudo ? { is_sudo: true } : {}),
    ...(targetingBody(form.targets) ?? {}),
    execute_concurrently: form.concurrent,
    abort_on_error: form.abortOnError,
    overlaps: form.overlaps,
    ...stagedBody(form.staged),
  };
}
