/** A run's children in the console: states, counts, filtering, durations and previews. */

export const RUN_STATES = ['running', 'successful', 'failed', 'unknown'] as const;
export type RunState = (typeof RUN_STATES)[number];

export interface ChildJob {
  jid: string;
  client_id: string;
  client_name: string;
  status: string;
  exit_code: number | null;
  started_at: string | null;
  finished_at: string | null;
  error: string;
  result: { stdout: string; stderr: string; stdout_truncated?: boolean; stderr_truncated?: boolean };
  command?: string;
  is_script?: boolean;
  created_at?: string;
  multi_job_id?: string;
}

export type StateFilter = RunState | 'all';

export function parseStateFilter(value: unknown): StateFilter {
  return typeof value === 'string' && (RUN_STATES as readonly string[]).includes(value)
    ? (value as RunState)
    : 'all';
}

export const filterByState = <J extends { status: string }>(jobs: readonly J[], state: StateFilter): J[] =>
  state === 'all' ? [...jobs] : jobs.filter((job) => job.status === state);

export function countStates(jobs: readonly { status: string }[]): Record<RunState, number> {
  const counts: Record<RunState, number> = { running: 0, successful: 0, failed: 0, unknown: 0 };
  for (const job of jobs) if (job.status in counts) counts[job.status as RunState] += 1;
  return counts;
}

/** Milliseconds from start to end (or to `now` while it runs); undefined before it started. */
export function jobDurationMs(job: Pick<ChildJob, 'started_at' | 'finished_at'>, now: number) {
  if (!job.started_at) return undefined;
  const end = job.finished_at ? Date.parse(job.finished_at) : now;
  return Math.max(0, end - Date.parse(job.started_at));
}

/** The first non-empty line of stdout (else stderr, else the error), cut to `max` characters. */
export function outputPreview(job: Pick<ChildJob, 'result' | 'error'>, max = 120): string {
  const source = job.result.stdout.trim() || job.result.stderr.trim() || job.error.trim();
  // The trimmed text starts with its first non-empty line. Found by index, not by splitting: an output may be
  // megabytes long, and only its start is shown.
  const newline = source.indexOf('\n');
  const line = newline < 0 ? source : source.slice(0, newline);
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
