/**
 * Staged rollout of a multi-client run (issue 27 §5): the run proceeds batch by batch, waits `batch_delay`
 * between batches and stops once `max_failures` of its jobs failed; the targets it did not start end `skipped`.
 */
import { z } from 'zod';
import { durationSeconds } from './jobs.js';

/** A run targets at most this many clients. */
const MAX_TARGETS = 100_000;
/** Longest wait between two batches. */
export const MAX_BATCH_DELAY_SEC = 7 * 86_400;
const PERCENT = /^(\d{1,3})%$/;

/** A count (an integer ≥ 1) or a share of the run's targets as "N%" (1–100); a percent stays the text "N%". */
const countOrPercent = z.union([z.int(), z.string()]).transform((value, ctx): number | string => {
  if (typeof value === 'number') {
    if (value >= 1 && value <= MAX_TARGETS) return value;
    ctx.addIssue({
      code: 'custom',
      message: `must be a count from 1 to ${MAX_TARGETS}, or a percent like "10%"`,
    });
    return z.NEVER;
  }
  const match = PERCENT.exec(value.trim());
  const percent = match ? Number(match[1]) : 0;
  if (percent >= 1 && percent <= 100) return `${percent}%`;
  ctx.addIssue({ code: 'custom', message: 'must be a count, or a percent from "1%" to "100%"' });
  return z.NEVER;
});

/** `30s`, `5m`, `1h`, `1d`, or seconds; 0 allowed (no wait). */
const batchDelaySchema = z
  .union([z.int(), z.string()])
  .transform((value, ctx) => {
    const seconds = typeof value === 'number' ? value : durationSeconds(value);
    if (seconds !== undefined) return seconds;
    ctx.addIssue({ code: 'custom', message: 'must be a duration like 30s, 5m or 1h, or seconds' });
    return z.NEVER;
  })
  .pipe(
    z
      .number()
      .min(0, 'must not be negative')
      .max(MAX_BATCH_DELAY_SEC, `must be at most ${MAX_BATCH_DELAY_SEC} s (7 days)`),
  );

/** The request fields of a staged run (POST /commands, POST /scripts, schedules). */
export const rolloutOptions = {
  batch_size: countOrPercent.optional(),
  batch_delay: batchDelaySchema.optional(),
  max_failures: countOrPercent.optional(),
};

type RolloutRequest = {
  batch_size?: number | string | undefined;
  batch_delay?: number | undefined;
  max_failures?: number | string | undefined;
};

/** batch_delay and max_failures act between batches: they need batch_size. */
export function checkRollout(body: RolloutRequest, ctx: z.RefinementCtx): void {
  if (body.batch_size !== undefined) return;
  for (const field of ['batch_delay', 'max_failures'] as const)
    if (body[field] !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: [field],
        message: 'needs batch_size: a staged run checks it between batches',
      });
}

/** A count, or a percent of `total` rounded up (at least 1). */
export function resolveShare(value: number | string, total: number): number {
  if (typeof value === 'number') return value;
  return Math.max(1, Math.ceil((Number.parseInt(value, 10) * total) / 100));
}

/**
 * A staged run's progress in GET /commands/{jid}. batch_size and max_failures are resolved against the run's
 * targets; `failures` counts its jobs that ended failed or unknown; `stopped` says why the run stopped starting
 * batches (max_failures reached, svcd stopped, the run was cancelled), null while it goes on or once it
 * completed every batch.
 */
export const rolloutProgressSchema = z.object({
  batch_size: z.number().int(),
  batch_delay_sec: z.number().int(),
  max_failures: z.number().int().nullable(),
  batches_total: z.number().int(),
  batches_done: z.number().int(),
  next_batch_at: z.string().nullable(),
  failures: z.number().int(),
  stopped: z.string().nullable(),
});
export type RolloutProgress = z.infer<typeof rolloutProgressSchema>;
