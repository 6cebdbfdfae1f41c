/**
 * The staged-rollout fields of the run and schedule forms (batch size, delay between batches, max failures) as
 * typed, and the request fields they become. svcd checks them and names the wrong one.
 */
export interface StagedOptions {
  /** A count or a percent ("10%"); '' runs every client in one go. */
  batchSize: string;
  /** Seconds or a duration ("30s", "5m"). */
  batchDelay: string;
  /** A count or a percent; '' has no limit. */
  maxFailures: string;
}

export const noStaging = (): StagedOptions => ({ batchSize: '', batchDelay: '', maxFailures: '' });

/** Digits become a number, anything else goes as typed; empty fields are left out. */
const value = (text: string): number | string | undefined => {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  return /^\d+$/.test(trimmed) ? Number(trimmed) : trimmed;
};

export function stagedBody(options: StagedOptions): Record<string, number | string> {
  const body: Record<string, number | string> = {};
  const fields = [
    ['batch_size', options.batchSize],
    ['batch_delay', options.batchDelay],
    ['max_failures', options.maxFailures],
  ] as const;
  for (const [field, text] of fields) {
    const v = value(text);
    if (v !== undefined) body[field] = v;
  }
  return body;
}

/** The fields of a stored schedule or run (batch_delay in seconds) as the form shows them. */
export function stagedOf(run: {
  batch_size?: number | string | undefined;
  batch_delay?: number | undefined;
  max_failures?: number | string | undefined;
}): StagedOptions {
  return {
    batchSize: run.batch_size === undefined ? '' : String(run.batch_size),
    batchDelay: run.batch_delay === undefined ? '' : String(run.batch_delay),
    maxFailures: run.max_failures === undefined ? '' : String(run.max_failures),
  };
}
