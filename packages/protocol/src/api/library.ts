/**
 * The script library (spec 2.6, 4.4): request bodies and the script as the API returns it. The script text is
 * stored and returned as plain text (not base64), as OpenRPort does.
 */
import { z } from 'zod';
import { MAX_SCRIPT_BYTES } from '../agent/jobs.js';
import { DEFAULT_JOB_TIMEOUT_SEC, MAX_JOB_TIMEOUT_SEC } from './jobs.js';

export const MAX_LIBRARY_SCRIPT_NAME_LENGTH = 200;
export const MAX_LIBRARY_SCRIPT_TAGS = 100;
export const MAX_LIBRARY_SCRIPT_TAG_LENGTH = 100;
const MAX_PATH_LENGTH = 4096;

const utf8Bytes = (text: string) => new TextEncoder().encode(text).length;

/** Zod's own message for a missing field speaks of `undefined`; this one says what to do. */
const required =
  (what: string) =>
  (issue: { input?: unknown }): string | undefined =>
    issue.input === undefined ? `is required: ${what}` : undefined;

const libraryScriptFields = (whenMissing: string) => ({
  name: z
    .string({ error: required(whenMissing) })
    .refine((s) => s.trim() !== '', 'must not be empty')
    .refine((s) => s.trim() === s, 'must not start or end with blanks')
    .refine(
      (s) => s.length <= MAX_LIBRARY_SCRIPT_NAME_LENGTH,
      `must be at most ${MAX_LIBRARY_SCRIPT_NAME_LENGTH} characters`,
    )
    // eslint-disable-next-line no-control-regex
    .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not contain control characters'),
  script: z
    .string({ error: required(whenMissing) })
    .refine((s) => s.trim() !== '', 'must not be empty')
    .refine((s) => !s.includes('\u0000'), 'must not contain NUL characters')
    .refine((s) => utf8Bytes(s) <= MAX_SCRIPT_BYTES, `must be at most ${MAX_SCRIPT_BYTES} bytes`),
  interpreter: z
    .string({ error: required(whenMissing) })
    .max(MAX_PATH_LENGTH)
    .refine((s) => s.trim() === s, 'must not start or end with blanks')
    .refine((s) => !s.includes('\u0000'), 'must not contain NUL characters'),
  is_sudo: z.boolean({ error: required(whenMissing) }),
  cwd: z
    .string({ error: required(whenMissing) })
    .max(MAX_PATH_LENGTH)
    .refine((s) => !s.includes('\u0000'), 'must not contain NUL characters'),
});

/**
 * OpenRPort's `tags` and `timeout_sec` (its library keeps both); optional on POST and PUT alike, as in OpenRPort:
 * left out, there are no tags and the timeout is the job default. A timeout of 0 also means the default.
 */
const openRPortFields = {
  tags: z
    .array(
      z
        .string()
        .refine((s) => s.trim() !== '', 'a tag must not be empty')
        .refine(
          (s) => s.length <= MAX_LIBRARY_SCRIPT_TAG_LENGTH,
          `a tag must be at most ${MAX_LIBRARY_SCRIPT_TAG_LENGTH} characters`,
        )
        // eslint-disable-next-line no-control-regex
        .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'a tag must not contain control characters'),
    )
    .max(MAX_LIBRARY_SCRIPT_TAGS, `give at most ${MAX_LIBRARY_SCRIPT_TAGS} tags`)
    .nullable()
    .transform((tags) => [...new Set(tags ?? [])])
    .default([]),
  timeout_sec: z
    .int()
    .min(0)
    .max(MAX_JOB_TIMEOUT_SEC)
    .nullable()
    .transform((sec) => (sec === null || sec === 0 ? DEFAULT_JOB_TIMEOUT_SEC : sec))
    .default(DEFAULT_JOB_TIMEOUT_SEC),
};

const createFields = libraryScriptFields('send at least name and script');
const replaceFields = libraryScriptFields(
  'PUT replaces the whole script, so send every field: name, interpreter, is_sudo, cwd, script',
);

/**
 * POST /library/scripts. `interpreter` '' (the default) is the client's default: sh on Linux and macOS, cmd.exe
 * on Windows (spec 2.6, 4.8); `cwd` '' runs the script where the agent runs.
 */
export const createLibraryScriptBodySchema = z.strictObject({
  name: createFields.name,
  script: createFields.script,
  interpreter: createFields.interpreter.default(''),
  is_sudo: createFields.is_sudo.default(false),
  cwd: createFields.cwd.default(''),
  ...openRPortFields,
});
export type CreateLibraryScriptBody = z.output<typeof createLibraryScriptBodySchema>;

/**
 * PUT /library/scripts/{id}: a full replacement, every spec field required (spec 4.4, 7.8); OpenRPort's tags and
 * timeout_sec, when left out, become no tags and the default timeout.
 */
export const replaceLibraryScriptBodySchema = z.strictObject({ ...replaceFields, ...openRPortFields });
export type ReplaceLibraryScriptBody = z.output<typeof replaceLibraryScriptBodySchema>;

/** A library script (spec 2.6). */
export const libraryScriptSchema = z.object({
  /** UUID assigned by svcd. */
  id: z.string(),
  name: z.string(),
  /** '' = the client's default interpreter. */
  interpreter: z.string(),
  is_sudo: z.boolean(),
  /** '' = none. */
  cwd: z.string(),
  script: z.string(),
  /** Free labels (OpenRPort's library field); distinct, in the order given. */
  tags: z.array(z.string()),
  /** Seconds a run of this script may take (OpenRPort's library field); runs by script_id use it by default. */
  timeout_sec: z.number().int(),
  /** Username of the creator. */
  created_by: z.string(),
  /** RFC 3339 with milliseconds, UTC. */
  created_at: z.string(),
  /** Who last changed it (the creator until a PUT). */
  updated_by: z.string(),
  /** RFC 3339 with milliseconds, UTC; created_at until a PUT. */
  updated_at: z.string(),
});
export type LibraryScript = z.infer<typeof libraryScriptSchema>;

export const LIBRARY_SCRIPT_FIELDS = Object.keys(libraryScriptSchema.shape) as (keyof LibraryScript)[];
