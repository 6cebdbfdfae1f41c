/**
 * Remote execution on the agent link.
 *
 * 1. svcd stores the job (status `running`) and sends the control request `job.run`. The agent checks its
 *    `[remote-commands]` / `[remote-scripts]` settings and filters, starts the process and replies with its pid and
 *    start time, or answers an `error` (`refused`, `disabled` or `failed`, with a message saying why), after which
 *    svcd records the job as `failed` with that message. Nothing runs when the reply is an error.
 * 2. The output travels on its own SSH session channel (subsystem JOB_OUTPUT_SUBSYSTEM) that the agent opens per
 *    job, never in a control message, so results of many MiB flow with SSH flow control. The channel starts with
 *    one JSON header line (jobOutputHeaderSchema), then carries frames `[type: u8][length: u32 BE][bytes]`:
 *    stdout and stderr chunks as they are produced (svcd forwards them live), then one `end` frame whose bytes
 *    are the JSON of jobEndSchema.
 * 3. Once svcd has stored the result it writes JOB_OUTPUT_ACK on the channel and closes it. Until then the agent
 *    keeps the result (output up to send_back_limit per stream): when the link drops first, or svcd restarts, the
 *    agent sends the whole result again on a new channel with `replay: true` after its next hello. svcd accepts a
 *    result only from the connection of the client the job was sent to, and only for a job still `running`; a
 *    result it will not store (unknown job, another client's job, job no longer running) is acknowledged too, so
 *    that the agent stops offering it. A channel closed without the ACK means "offer it again later".
 * 4. A result that has already ended when the agent offers it, with at most MAX_INLINE_RESULT_BYTES of output,
 *    may instead travel in one control request `job.result` (jobResultSchema) on the agent's own control
 *    channel: svcd answers it once the result is stored (or will never be), which is the ACK, and an `error`
 *    means "offer it again later". It spares the channel open, subsystem request, frames and close of step 2,
 *    the bulk of a short job's traffic; the guarantees are those of step 3. An svcd that does not know the
 *    request answers `unknown_type`, and the agent uses a channel.
 */
import * as z from 'zod/mini';

export const JOB_OUTPUT_SUBSYSTEM = 'svc-job-output';

/** Frame types on a job output channel. */
export const JOB_FRAME = { stdout: 1, stderr: 2, end: 3 } as const;
export type JobFrameType = (typeof JOB_FRAME)[keyof typeof JOB_FRAME];
export const JOB_FRAME_HEADER_BYTES = 5;
/** Largest frame payload either end writes or accepts. */
export const MAX_JOB_FRAME_BYTES = 64 * 1024;
/** svcd → agent on the output channel once the result is stored. */
export const JOB_OUTPUT_ACK = 'stored\n';

/** Largest script svcd sends inside `job.run` (decoded bytes); the control message limit is 256 KiB. */
export const MAX_SCRIPT_BYTES = 160 * 1024;
/** Largest command text. */
export const MAX_COMMAND_BYTES = 64 * 1024;
/** Environment variables one job may set, and their names' and values' total size (UTF-8 bytes). */
export const MAX_JOB_ENV_VARS = 64;
export const MAX_JOB_ENV_BYTES = 32 * 1024;
/** A portable environment variable name: letters, digits and `_`, not starting with a digit. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** What an agent that knows `env` and `redact` in job.run says in its hello's `capabilities`. */
export const JOB_ENV_CAPABILITY = 'job.env';

/**
 * The spec's four statuses plus ours (issue 27): `queued` (waiting for its client to connect, run with
 * queue_ttl), `expired` (its client did not connect within queue_ttl), `cancelled` (stopped by DELETE),
 * `skipped` (a staged run stopped before it reached the client: max_failures, or svcd stopped).
 */
export const JOB_STATUSES = [
  'running',
  'successful',
  'failed',
  'unknown',
  'queued',
  'expired',
  'cancelled',
  'skipped',
] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** Timestamps on the wire: RFC 3339 with milliseconds and an offset, e.g. 2026-11-25T15:04:05.123Z. */
const timestamp = z.iso.datetime({ offset: true });

export const jobRunSchema = z.object({
  jid: z.uuid(),
  /** The command as the operator sent it; for a script job, empty. */
  command: z.string().check(z.maxLength(MAX_COMMAND_BYTES)),
  /** Base64 of the script's bytes; only for script jobs. */
  script: z.optional(z.string().check(z.maxLength(Math.ceil(MAX_SCRIPT_BYTES / 3) * 4))),
  /** '' = the default (sh on Linux/macOS, cmd.exe on Windows); a name, an absolute path or an alias. */
  interpreter: z.string().check(z.maxLength(4096)),
  /** '' = the agent's own working directory. */
  cwd: z.string().check(z.maxLength(4096)),
  is_sudo: z.boolean(),
  /** After this many seconds the job is reported `unknown` and its process keeps running. */
  timeout_sec: z.int().check(z.gte(1), z.lte(31 * 24 * 3600)),
  /**
   * Kill the whole process group at timeout_sec (SIGTERM, SIGKILL after a grace) and report `failed`, instead
   * of reporting `unknown` and leaving it running. Sent only when true (older agents ignore unknown fields).
   */
  timeout_kill: z.optional(z.boolean()),
  /**
   * Set in the process's environment on top of the agent's own (never on its command line, never in its script
   * file). Sent only when the run has some; svcd sends it only to an agent whose hello lists JOB_ENV_CAPABILITY.
   */
  env: z.optional(
    z
      .record(z.string().check(z.regex(ENV_NAME)), z.string())
      .check(
        z.refine(
          (env) => Object.keys(env).length <= MAX_JOB_ENV_VARS,
          `at most ${MAX_JOB_ENV_VARS} variables`,
        ),
      ),
  ),
  /**
   * The names in `env` whose values are secrets (from the vault), each with the label of its entry: the agent
   * replaces every occurrence of such a value in the job's output with `[redacted:<label>]`.
   */
  redact: z.optional(z.record(z.string().check(z.regex(ENV_NAME)), z.string().check(z.maxLength(255)))),
});
export type JobRun = z.infer<typeof jobRunSchema>;

export const jobRunReplySchema = z.object({
  pid: z.int().check(z.nonnegative()),
  started_at: timestamp,
});
export type JobRunReply = z.infer<typeof jobRunReplySchema>;

export const jobOutputHeaderSchema = z.object({
  jid: z.uuid(),
  /** true when the agent sends a result again after a reconnect; svcd then drops any partial output it holds. */
  replay: z.boolean(),
});
export type JobOutputHeader = z.infer<typeof jobOutputHeaderSchema>;

/** Output (stdout and stderr together) a `job.result` request may carry; more goes on a channel. */
export const MAX_INLINE_RESULT_BYTES = 64 * 1024;
const inlineOutput = z.base64().check(z.maxLength(Math.ceil(MAX_INLINE_RESULT_BYTES / 3) * 4));

export const jobEndSchema = z.object({
  /**
   * `successful` (exit 0), `failed` (non-zero exit, killed by a signal, or killed at the timeout with
   * timeout_kill), `unknown` (timeout_sec passed), `cancelled` (killed on svcd's `job.cancel`).
   */
  status: z.enum(['successful', 'failed', 'unknown', 'cancelled']),
  /** null when the process was killed by a signal or is still running (`unknown`). */
  exit_code: z.nullable(z.int()),
  finished_at: timestamp,
  /** Why the job failed or is unknown, in words; '' when it succeeded. */
  error: z.string().check(z.maxLength(4096)),
  stdout_truncated: z.boolean(),
  stderr_truncated: z.boolean(),
});
export type JobEnd = z.infer<typeof jobEndSchema>;

/** agent → svcd: a whole result in one control request (step 4 above); output is base64 of the raw bytes. */
export const jobResultSchema = z.object({
  jid: z.uuid(),
  replay: z.boolean(),
  stdout: inlineOutput,
  stderr: inlineOutput,
  end: jobEndSchema,
});
export type JobResult = z.infer<typeof jobResultSchema>;

/**
 * svcd → agent: stop a running job (DELETE of a job). The agent sends SIGTERM to the job's whole process group,
 * SIGKILL after JOB_CANCEL_GRACE_MS, and reports the result as `cancelled` with the output so far. `running`
 * false: the agent has no running process for that job (it ended, its result is on its way). An agent from
 * before cancel answers `unknown_type`.
 */
export const jobCancelSchema = z.object({ jid: z.uuid() });
export const jobCancelReplySchema = z.object({ running: z.boolean() });
export type JobCancelReply = z.infer<typeof jobCancelReplySchema>;
/** Between SIGTERM and SIGKILL of a cancelled (or timeout_kill) job's process group. */
export const JOB_CANCEL_GRACE_MS = 5_000;
