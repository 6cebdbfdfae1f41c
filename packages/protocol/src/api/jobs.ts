/**
 * Command and script jobs in the API (spec 2.9, 2.10, 4.5, 4.6): request bodies and the job as GET returns it.
 * Field names follow the spec and OpenRPort, so its command-line client reads them unchanged.
 */
import { z } from 'zod';
import { JOB_STATUSES, MAX_COMMAND_BYTES, MAX_SCRIPT_BYTES } from '../agent/jobs.js';
import { runEnvSchema, type RunEnv } from './run-env.js';

/** Used when a request gives no timeout_sec (OpenRPort's run_remote_cmd_timeout_sec default). */
export const DEFAULT_JOB_TIMEOUT_SEC = 60;
export const MAX_JOB_TIMEOUT_SEC = 31 * 24 * 3600;

const utf8Bytes = (text: string) => new TextEncoder().encode(text).length;

export const commandTextSchema = z
  .string()
  .refine((s) => s.trim() !== '', 'must not be empty')
  .refine((s) => utf8Bytes(s) <= MAX_COMMAND_BYTES, `must be at most ${MAX_COMMAND_BYTES} bytes`);

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A script as the API takes it: standard base64 of its bytes, not empty. */
export const scriptTextSchema = z
  .string()
  .transform((s) => s.replace(/\s+/g, ''))
  .refine((s) => s !== '', 'must not be empty; send the script as base64')
  .refine((s) => BASE64.test(s), 'must be valid base64 (standard alphabet, with padding)')
  .refine(
    (s) => Math.floor((s.length * 3) / 4) - (s.match(/=+$/)?.[0].length ?? 0) <= MAX_SCRIPT_BYTES,
    `the decoded script must be at most ${MAX_SCRIPT_BYTES} bytes`,
  );

/** A path or name handed to the agent's process spawn, which cannot take a NUL byte. */
const spawnText = z
  .string()
  .max(4096)
  .refine((s) => !s.includes('\u0000'), 'must not contain NUL characters');

/** Longest queue_ttl: as long as the longest timeout. */
export const MAX_QUEUE_TTL_SEC = MAX_JOB_TIMEOUT_SEC;
const DURATION = /^(\d{1,10})(s|m|h|d)$/;
const UNIT_SEC = { s: 1, m: 60, h: 3600, d: 86_400 } as const;

/** `90s`, `15m`, `2h`, `7d` in seconds; undefined when the text is not such a duration. */
export function durationSeconds(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  return match ? Number(match[1]) * UNIT_SEC[match[2] as keyof typeof UNIT_SEC] : undefined;
}

/**
 * How long a job waits for a client that is not connected (issue 27): `90s`, `15m`, `2h`, `7d`, or a number of
 * seconds; becomes seconds.
 */
export const queueTtlSchema = z
  .union([z.int(), z.string()])
  .transform((value, ctx) => {
    if (typeof value === 'number') return value;
    const seconds = durationSeconds(value);
    if (seconds === undefined) {
      ctx.addIssue({ code: 'custom', message: 'must be a duration like 90s, 15m, 2h or 7d, or seconds' });
      return z.NEVER;
    }
    return seconds;
  })
  .pipe(
    z
      .number()
      .min(1, 'must be at least 1 s')
      .max(MAX_QUEUE_TTL_SEC, `must be at most ${MAX_QUEUE_TTL_SEC} s (31 days)`),
  );

const runOptionSchemas = {
  timeout_sec: z.int().min(1).max(MAX_JOB_TIMEOUT_SEC),
  cwd: spawnText,
  is_sudo: z.boolean(),
  interpreter: spawnText,
};

/**
 * Ours (issue 27): `queue_ttl` queues the job for a client that is not connected (instead of failing it) until
 * it connects or the TTL passes (`expired`); `timeout_kill` kills the process group at timeout_sec and reports
 * `failed` instead of the spec's `unknown` with the process left running.
 */
export const deliveryOptions = {
  queue_ttl: queueTtlSchema.optional(),
  timeout_kill: z.boolean().optional(),
  env: runEnvSchema.optional(),
};

/** What running something on a client takes besides the command or script. */
export const runOptions = {
  timeout_sec: runOptionSchemas.timeout_sec.default(DEFAULT_JOB_TIMEOUT_SEC),
  cwd: runOptionSchemas.cwd.default(''),
  is_sudo: runOptionSchemas.is_sudo.default(false),
  interpreter: runOptionSchemas.interpreter.default(''),
  ...deliveryOptions,
};

/**
 * Running a library script by its id instead of sending `script`: the options left out are the library script's
 * own (its interpreter, is_sudo, cwd and timeout_sec).
 */
export const libraryRunOptions = {
  script_id: z.string().min(1, 'give the id of a library script (GET /library/scripts lists them)').max(100),
  timeout_sec: runOptionSchemas.timeout_sec.optional(),
  cwd: runOptionSchemas.cwd.optional(),
  is_sudo: runOptionSchemas.is_sudo.optional(),
  interpreter: runOptionSchemas.interpreter.optional(),
  ...deliveryOptions,
};

/** The run options a request by script_id gave; the rest come from the library script. */
export interface LibraryRunRequest {
  script_id: string;
  timeout_sec?: number | undefined;
  cwd?: string | undefined;
  is_sudo?: boolean | undefined;
  interpreter?: string | undefined;
  queue_ttl?: number | undefined;
  timeout_kill?: boolean | undefined;
  env?: RunEnv | undefined;
}

export const commandBodySchema = z.strictObject({ command: commandTextSchema, ...runOptions });
export type CommandBody = z.output<typeof commandBodySchema>;

export const scriptBodySchema = z.strictObject({ script: scriptTextSchema, ...runOptions });
export type ScriptBody = z.output<typeof scriptBodySchema>;

/** POST /clients/{id}/scripts with `script_id`: a library script, run as it is stored. */
export const libraryScriptRunBodySchema = z.strictObject(libraryRunOptions);
export type LibraryScriptRunBody = z.output<typeof libraryScriptRunBodySchema>;

export const jobStatusSchema = z.enum(JOB_STATUSES);

/** A job on one client (spec 2.9) plus `exit_code`, `error`, `is_script` and a truncated flag per stream. */
export const jobSchema = z.object({
  jid: z.string(),
  status: jobStatusSchema,
  /** RFC 3339 with milliseconds; null until the agent has started the process. */
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  client_id: z.string(),
  client_name: z.string(),
  command: z.string(),
  cwd: z.string(),
  is_sudo: z.boolean(),
  is_script: z.boolean(),
  interpreter: z.string(),
  pid: z.number().int().nullable(),
  created_by: z.string(),
  created_at: z.string(),
  timeout_sec: z.number().int(),
  /** Present only on a job that belongs to a multi-client job. */
  multi_job_id: z.string().optional(),
  /** Present only on a job run with timeout_kill. */
  timeout_kill: z.boolean().optional(),
  /** Present only on a job run with queue_ttl: until when it waits for its client (RFC 3339). */
  queue_expires_at: z.string().optional(),
  exit_code: z.number().int().nullable(),
  error: z.string(),
  result: z.object({
    stdout: z.string(),
    stderr: z.string(),
    stdout_truncated: z.boolean(),
    stderr_truncated: z.boolean(),
  }),
});
export type Job = z.infer<typeof jobSchema>;

export const JOB_FIELDS = Object.keys(jobSchema.shape) as (keyof Job)[];

export const jobCreatedSchema = z.object({ jid: z.string() });
export type JobCreated = z.infer<typeof jobCreatedSchema>;

/** DELETE /clients/{id}/commands/{jid}: `cancelled` at once (it was queued), or `cancelling` (the agent kills it). */
export const jobCancelledSchema = z.object({
  jid: z.string(),
  status: z.enum(['cancelled', 'cancelling']),
});
export type JobCancelled = z.infer<typeof jobCancelledSchema>;

/** DELETE /commands/{jid}: how many children were cancelled at once, or are being killed by their agents. */
export const runCancelledSchema = z.object({
  jid: z.string(),
  cancelled: z.number().int(),
  cancelling: z.number().int(),
  /** Running children that could not be reached (client not connected, or an agent too old to cancel). */
  not_cancelled: z.number().int(),
});
export type RunCancelled = z.infer<typeof runCancelledSchema>;
