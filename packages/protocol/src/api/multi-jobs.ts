/**
 * Commands and scripts on many clients (spec 2.10, 4.5, 4.6): request bodies (POST /commands, POST /scripts and
 * the one request message of the /ws/commands and /ws/scripts sockets) and the multi-client job as GET returns it.
 */
import { z } from 'zod';
import {
  commandTextSchema,
  jobSchema,
  jobStatusSchema,
  libraryRunOptions,
  runOptions,
  scriptTextSchema,
} from './jobs.js';
import { checkRollout, rolloutOptions, rolloutProgressSchema } from './rollout.js';
import { vaultReferenceSchema } from './run-env.js';

const operatorSchema = z
  .string()
  .transform((s) => s.toUpperCase())
  .pipe(z.enum(['AND', 'OR'], { error: 'must be AND or OR' }))
  .default('OR');

const tagsTargetSchema = z.strictObject({
  operator: operatorSchema,
  tags: z.array(z.string().min(1, 'a tag must not be empty')).min(1, 'list at least one tag'),
});

const labelEntry = z
  .string()
  .refine((s) => s.includes(':'), 'each label must have the form key:value')
  .refine((s) => s.slice(0, s.indexOf(':')).trim() !== '', 'a label key must not be empty');

const labelsTargetSchema = z.strictObject({
  operator: operatorSchema,
  labels: z.array(labelEntry).min(1, 'list at least one label (key:value)'),
});

const idList = z.array(z.string().min(1, 'an id must not be empty')).max(100_000).nullable().optional();

/** Who runs it and how: the targeting and execution fields every multi-client request has. */
export const multiShape = {
  client_ids: idList,
  group_ids: idList,
  tags: tagsTargetSchema.nullable().optional(),
  labels: labelsTargetSchema.nullable().optional(),
  execute_concurrently: z.boolean().default(false),
  abort_on_error: z.boolean().default(true),
  ...rolloutOptions,
};

const nonEmpty = (list: readonly string[] | null | undefined): boolean => (list?.length ?? 0) > 0;

type Targeting = {
  client_ids?: string[] | null | undefined;
  group_ids?: string[] | null | undefined;
  tags?: unknown;
  labels?: unknown;
};

/** tags and labels each stand alone; client_ids and group_ids combine; something must be given. */
export function checkTargeting(body: Targeting, ctx: z.RefinementCtx): void {
  const byIds = nonEmpty(body.client_ids) || nonEmpty(body.group_ids);
  const chosen = [byIds && 'client_ids/group_ids', body.tags && 'tags', body.labels && 'labels'].filter(
    Boolean,
  );
  if (chosen.length > 1)
    ctx.addIssue({
      code: 'custom',
      message: `Multiple targeting parameters: ${chosen.join(' and ')} cannot be combined; use client_ids and/or group_ids, or tags, or labels`,
    });
  else if (chosen.length === 0)
    ctx.addIssue({
      code: 'custom',
      message: 'Missing targeting parameters: give client_ids, group_ids, tags or labels',
    });
}

/** Targeting, and the staged-rollout fields that act only together. */
function checkMultiRun(body: Targeting & Parameters<typeof checkRollout>[0], ctx: z.RefinementCtx): void {
  checkTargeting(body, ctx);
  checkRollout(body, ctx);
}

export const multiCommandBodySchema = z
  .strictObject({ command: commandTextSchema, ...runOptions, ...multiShape })
  .superRefine(checkMultiRun);
export type MultiCommandBody = z.output<typeof multiCommandBodySchema>;

export const multiScriptBodySchema = z
  .strictObject({ script: scriptTextSchema, ...runOptions, ...multiShape })
  .superRefine(checkMultiRun);
export type MultiScriptBody = z.output<typeof multiScriptBodySchema>;

/** POST /scripts with `script_id` instead of `script`: a library script on many clients. */
export const multiLibraryScriptRunBodySchema = z
  .strictObject({ ...libraryRunOptions, ...multiShape })
  .superRefine(checkMultiRun);
export type MultiLibraryScriptRunBody = z.output<typeof multiLibraryScriptRunBodySchema>;

/**
 * OpenRPort's command-line client sends both `command` and `script` (the unused one as ""), and 0 or nothing
 * as timeout_sec for "the default"; the socket's request accepts exactly that besides the POST body.
 */
const defaultTimeout = z.preprocess(
  (value) => (value === 0 || value === null ? undefined : value),
  runOptions.timeout_sec,
);
const unusedText = z.literal('', { error: 'must be empty or left out on this socket' }).optional();
const nullableText = (schema: z.ZodDefault<z.ZodString>) =>
  z.preprocess((value) => (value === null ? undefined : value), schema);

const socketOptions = {
  ...runOptions,
  timeout_sec: defaultTimeout,
  cwd: nullableText(runOptions.cwd),
  interpreter: nullableText(runOptions.interpreter),
};

export const wsCommandRequestSchema = z
  .strictObject({ command: commandTextSchema, script: unusedText, ...socketOptions, ...multiShape })
  .superRefine(checkMultiRun);

export const wsScriptRequestSchema = z
  .strictObject({ script: scriptTextSchema, command: unusedText, ...socketOptions, ...multiShape })
  .superRefine(checkMultiRun);

export const targetOperatorSchema = z.enum(['AND', 'OR']);

/** A multi-client job without its child jobs, as GET /commands lists it. */
export const multiJobSummarySchema = z.object({
  jid: z.string(),
  started_at: z.string(),
  created_by: z.string(),
  client_ids: z.array(z.string()).nullable(),
  group_ids: z.array(z.string()).nullable(),
  tags: z.object({ operator: targetOperatorSchema, tags: z.array(z.string()) }).nullable(),
  labels: z.object({ operator: targetOperatorSchema, labels: z.array(z.string()) }).nullable(),
  /** The command, or for a script job the script's text. */
  command: z.string(),
  cwd: z.string(),
  interpreter: z.string(),
  is_sudo: z.boolean(),
  is_script: z.boolean(),
  timeout_sec: z.number().int(),
  concurrent: z.boolean(),
  abort_on_err: z.boolean(),
  /** Present only on a run a schedule started (GET /schedules/{id}). */
  schedule_id: z.string().optional(),
  /** The run's delivery and staged-rollout options, each present only when the request gave it. */
  queue_ttl: z.number().int().optional(),
  timeout_kill: z.boolean().optional(),
  batch_size: z.union([z.number().int(), z.string()]).optional(),
  /** Seconds. */
  batch_delay: z.number().int().optional(),
  max_failures: z.union([z.number().int(), z.string()]).optional(),
  env: z
    .record(z.string(), vaultReferenceSchema)
    .optional()
    .describe(
      "The vault references of the run's env (variable name → vault key), present when it had some; a rerun " +
        'resolves them again for the user who asks for it. Values are never stored.',
    ),
  env_plain: z
    .array(z.string())
    .optional()
    .describe(
      "Names of the run's env variables given as plain values, present when it had some: svcd does not keep " +
        'their values, so the run cannot be rerun (409 ERR_RERUN_ENV_NOT_KEPT).',
    ),
});
export type MultiJobSummary = z.infer<typeof multiJobSummarySchema>;

/**
 * Spec 2.10: the multi-client job with its child jobs (each carrying multi_job_id), plus the run's overall
 * `status` and `finished_at`. It is `running` until every client it targets has a child job that ended; then
 * `failed` when a child failed, else `unknown` when a child's outcome is unknown, else `successful`.
 * `finished_at` is when its last child ended, null while it runs.
 */
export const multiJobSchema = multiJobSummarySchema.extend({
  status: jobStatusSchema,
  finished_at: z.string().nullable(),
  jobs: z.array(jobSchema),
  /** Only on a staged run (batch_size given). */
  rollout: rolloutProgressSchema.optional(),
});
export type MultiJob = z.infer<typeof multiJobSchema>;

export const MULTI_JOB_FIELDS = Object.keys(multiJobSchema.shape) as (keyof MultiJob)[];
export const MULTI_JOB_SUMMARY_FIELDS = Object.keys(multiJobSummarySchema.shape) as (keyof MultiJobSummary)[];

/** A live output chunk on /ws/commands and /ws/scripts (OpenRPort's shape). */
export interface JobOutputChunkMessage {
  jid: string;
  client_id: string;
  client_name: string;
  result: { stdout: string; stderr: string; summary: '' };
}

/**
 * POST /commands/{jid}/rerun?only=failed|all: which targets of the run run again. `failed` (the default) takes
 * every client whose child job ended other than `successful` (failed or unknown); `all` every client with a child.
 */
export const RERUN_SELECTIONS = ['failed', 'all'] as const;
export type RerunSelection = (typeof RERUN_SELECTIONS)[number];
export const rerunSelectionSchema = z.enum(RERUN_SELECTIONS, { error: 'only must be failed or all' });

/** The columns of a run exported as CSV (GET /commands/{jid} with Accept: text/csv), in order. */
export const RUN_CSV_COLUMNS = [
  'client_id',
  'client_name',
  'status',
  'exit_code',
  'started_at',
  'finished_at',
  'duration_sec',
  'error',
  'stdout',
  'stderr',
] as const;
