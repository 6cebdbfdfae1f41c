/**
 * `env` of a command or script run (issue 27 §4): environment variables for the process, each a plain value or a
 * reference to a vault entry by its key, which svcd resolves when it dispatches the run.
 */
import { z } from 'zod';
import { ENV_NAME, MAX_JOB_ENV_BYTES, MAX_JOB_ENV_VARS } from '../agent/jobs.js';

/** `{"vault": "<key>"}`: the value of the vault entry with that key. */
export const vaultReferenceSchema = z.strictObject({
  vault: z
    .string()
    .min(1, 'give the key of a vault entry')
    .max(255, 'a vault key has at most 255 characters'),
});
export type VaultReference = z.infer<typeof vaultReferenceSchema>;

const plainValueSchema = z
  .string()
  .max(MAX_JOB_ENV_BYTES, `must be at most ${MAX_JOB_ENV_BYTES} characters`)
  .refine((s) => !s.includes('\u0000'), 'must not contain NUL characters');

export const runEnvSchema = z
  .record(
    z
      .string()
      .regex(
        ENV_NAME,
        'must be an environment variable name: letters, digits and _, not starting with a digit',
      ),
    z.union([plainValueSchema, vaultReferenceSchema], {
      error: 'must be a string or {"vault": "<key of a vault entry>"}',
    }),
  )
  .refine((env) => Object.keys(env).length <= MAX_JOB_ENV_VARS, `at most ${MAX_JOB_ENV_VARS} variables`)
  .describe(
    'Environment variables for the process: a string, or {"vault": "<key>"} for the value of a vault entry ' +
      '(resolved when the run is dispatched, for the requesting user; every occurrence of the value in the ' +
      'output is replaced by [redacted:<key>]).',
  );
export type RunEnv = z.infer<typeof runEnvSchema>;

export const isVaultReference = (value: RunEnv[string]): value is VaultReference => typeof value !== 'string';
