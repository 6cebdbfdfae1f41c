/**
 * Schedules (OpenRPort's `/schedules`): a command or script run on many clients by a cron expression in a time
 * zone. The request body is POST's and PUT's (PUT replaces the whole schedule); the schedule as GET returns it.
 */
import { z } from 'zod';
import { commandTextSchema, deliveryOptions, jobStatusSchema, runOptions, scriptTextSchema } from './jobs.js';
import { checkTargeting, multiJobSummarySchema, multiShape } from './multi-jobs.js';
import { runEnvSchema } from './run-env.js';
import { checkRollout } from './rollout.js';

export const MAX_SCHEDULE_NAME_LENGTH = 200;
/** Firings GET /schedules/{id}/runs returns, newest first. */
export const SCHEDULE_HISTORY_LENGTH = 50;

const missing =
  (what: string) =>
  (issue: { input?: unknown }): string | undefined =>
    issue.input === undefined ? `is required: ${what}` : undefined;

const nameSchema = z
  .string({ error: missing('give the schedule a name') })
  .refine((s) => s.trim() !== '', 'must not be empty')
  .refine(
    (s) => s.length <= MAX_SCHEDULE_NAME_LENGTH,
    `must be at most ${MAX_SCHEDULE_NAME_LENGTH} characters`,
  )
  // eslint-disable-next-line no-control-regex
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not contain control characters');

/** Checked further by svcd's cron parser, which says which field is wrong. */
const cronSchema = z
  .string({ error: missing('a cron expression such as "*/5 * * * *"') })
  .min(1, 'must not be empty; give a cron expression such as "*/5 * * * *"')
  .max(200, 'must be at most 200 characters');

const timezoneSchema = z
  .string()
  .min(1, 'must not be empty; give an IANA time zone such as "Europe/Berlin", or leave it out for UTC')
  .max(100)
  .default('UTC');

export const SCHEDULE_TYPES = ['command', 'script'] as const;

type ScheduleShape = {
  type: (typeof SCHEDULE_TYPES)[number];
  command?: string | undefined;
  script?: string | undefined;
  script_id?: string | undefined;
};

/** `command` for a command; exactly one of `script` (base64) and `script_id` (a library script) for a script. */
function checkWhat(body: ScheduleShape, ctx: z.RefinementCtx): void {
  const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
  if (body.type === 'command') {
    if (body.command === undefined) issue('command', 'is required when type is "command"');
    if (body.script !== undefined) issue('script', 'only with type "script"');
    if (body.script_id !== undefined) issue('script_id', 'only with type "script"');
    return;
  }
  if (body.command !== undefined) issue('command', 'only with type "command"; give script or script_id');
  const given = Number(body.script !== undefined) + Number(body.script_id !== undefined);
  if (given !== 1)
    issue(
      'script',
      given === 0
        ? 'a schedule of type "script" needs script (base64) or script_id (a library script)'
        : 'give script or script_id, not both',
    );
}

/** POST /schedules and PUT /schedules/{id}. */
export const scheduleBodySchema = z
  .strictObject({
    name: nameSchema,
    schedule: cronSchema,
    timezone: timezoneSchema,
    type: z.enum(SCHEDULE_TYPES, { error: 'must be "command" or "script"' }),
    command: commandTextSchema.optional(),
    script: scriptTextSchema.optional(),
    script_id: z
      .string()
      .min(1, 'give the id of a library script (GET /library/scripts lists them)')
      .max(100)
      .optional(),
    // Left out: the default (60 s, "", false, ""), or for script_id the library script's own at each firing.
    timeout_sec: runOptions.timeout_sec.removeDefault().optional(),
    cwd: runOptions.cwd.removeDefault().optional(),
    is_sudo: runOptions.is_sudo.removeDefault().optional(),
    interpreter: runOptions.interpreter.removeDefault().optional(),
    // env is stored as given: vault references are resolved at each firing, as the schedule's owner.
    ...deliveryOptions,
    ...multiShape,
    overlaps: z.boolean().default(false),
  })
  .superRefine((body, ctx) => {
    checkWhat(body, ctx);
    checkTargeting(body, ctx);
    checkRollout(body, ctx);
  });
export type ScheduleBody = z.output<typeof scheduleBodySchema>;

const countsSchema = z.object(
  Object.fromEntries(jobStatusSchema.options.map((s) => [s, z.number().int()])) as Record<
    z.infer<typeof jobStatusSchema>,
    z.ZodNumber
  >,
);

/** What one firing did: a run started, or why not. */
export const FIRING_OUTCOMES = ['started', 'skipped', 'missed', 'failed'] as const;
export const firingOutcomeSchema = z.enum(FIRING_OUTCOMES);

/** One firing of a schedule with its run's state (counts of its jobs by status). */
export const scheduleFiringSchema = z.object({
  /** The minute the cron expression named. */
  scheduled_at: z.string(),
  fired_at: z.string(),
  outcome: firingOutcomeSchema,
  /** Why it was skipped, missed or failed; "" when started. */
  reason: z.string(),
  /** The multi-client job it started (GET /commands/{jid}), else null. */
  jid: z.string().nullable(),
  status: jobStatusSchema.nullable(),
  client_count: z.number().int().nullable(),
  jobs: countsSchema.nullable(),
});
export type ScheduleFiring = z.infer<typeof scheduleFiringSchema>;

/** OpenRPort's last_execution, plus the run's jid and outcome. */
export const lastExecutionSchema = z.object({
  started_at: z.string(),
  jid: z.string().nullable(),
  outcome: firingOutcomeSchema,
  status: z.string(),
  client_count: z.number().int(),
  success_count: z.number().int(),
  summary: z.string(),
});

const targeting = multiJobSummarySchema.pick({ client_ids: true, group_ids: true, tags: true, labels: true });

export const scheduleSchema = z.object({
  id: z.string(),
  name: z.string(),
  schedule: z.string(),
  timezone: z.string(),
  type: z.enum(SCHEDULE_TYPES),
  ...targeting.shape,
  /** The command; "" for a script. */
  command: z.string(),
  /** The script as base64; "" for a command or a library script. */
  script: z.string(),
  /** The library script run at each firing (its text as it is then); null otherwise. */
  script_id: z.string().nullable(),
  /** These four are null only for a script_id schedule that left them out: the library script's own apply. */
  interpreter: z.string().nullable(),
  cwd: z.string().nullable(),
  is_sudo: z.boolean().nullable(),
  timeout_sec: z.number().int().nullable(),
  execute_concurrently: z.boolean(),
  abort_on_error: z.boolean(),
  overlaps: z.boolean(),
  /** As given: plain values and vault references (never a vault value). */
  env: runEnvSchema.nullable(),
  /** Each run option below is present only when the schedule gives it (queue_ttl and batch_delay in seconds). */
  queue_ttl: z.number().int().optional(),
  timeout_kill: z.boolean().optional(),
  batch_size: z.union([z.number().int(), z.string()]).optional(),
  batch_delay: z.number().int().optional(),
  max_failures: z.union([z.number().int(), z.string()]).optional(),
  created_at: z.string(),
  created_by: z.string(),
  updated_at: z.string(),
  updated_by: z.string(),
  /** The next firing; null if the expression never fires again. */
  next_run_at: z.string().nullable(),
  last_execution: lastExecutionSchema.nullable(),
});
export type Schedule = z.infer<typeof scheduleSchema>;

export const SCHEDULE_FIELDS = Object.keys(scheduleSchema.shape) as (keyof Schedule)[];

/** GET /schedules/{id}/runs: meta counts every recorded firing by outcome. */
export const firingCountsSchema = z.object(
  Object.fromEntries(FIRING_OUTCOMES.map((o) => [o, z.number().int()])) as Record<
    (typeof FIRING_OUTCOMES)[number],
    z.ZodNumber
  >,
);
export type FiringCounts = z.infer<typeof firingCountsSchema>;
