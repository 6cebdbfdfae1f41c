/**
 * Whether the run page may say the run is over, and what it says meanwhile. Only svcd's own status of the run
 * decides: the rows never do, since a run creates its children as it reaches its clients (in windows, or batch by
 * batch) so the clients not reached yet have no row, and the table renders only the rows in view.
 */
export interface RunProgress {
  done: boolean;
  text: string;
}

const OPEN = new Set(['running', 'queued']);

/** `status`: the run's status as svcd reports it; `rows`: the jobs the page knows of so far. */
export function runProgress(status: string, rows: readonly { status: string }[]): RunProgress {
  const jobs = rows.length === 1 ? '1 job' : `${rows.length} jobs`;
  if (status !== 'running') return { done: true, text: `The run is over: ${jobs}, every one ended.` };
  const ended = rows.filter((row) => !OPEN.has(row.status)).length;
  const left = rows.length - ended;
  return {
    done: false,
    text:
      left > 0
        ? `Still running: ${ended} of ${jobs} ended so far.`
        : `Still running: ${ended === 0 ? 'no job yet' : `the ${jobs} listed ended`}; the clients not reached yet get theirs as the run goes on.`,
  };
}
