/**
 * A multi-client run as CSV (GET /commands/{jid} with Accept: text/csv): one row per child job, RFC 4180 quoting,
 * produced page by page so a run on 10,000 clients never sits in memory or blocks the event loop at once.
 */
import { RUN_CSV_COLUMNS, type Job } from '@svc/protocol';

/** Children read per page while exporting. */
export const EXPORT_PAGE = 200;

/**
 * One CSV cell: quoted when it holds a quote, comma or line break (quotes doubled). Text that a spreadsheet
 * would take for a formula (starting with = + - @ or a tab/CR) gets a leading apostrophe, so output from a
 * client cannot run anything when an operator opens the file; numbers and timestamps are never text cells.
 */
export function csvCell(value: string | number | null, text = true): string {
  if (value === null) return '';
  let cell = String(value);
  if (text && /^[=+\-@\t\r]/.test(cell)) cell = `'${cell}`;
  return /[",\r\n]/.test(cell) ? `"${cell.replace(/"/g, '""')}"` : cell;
}

/** Seconds between start and end with millisecond precision; empty while it runs or when it never started. */
export function durationSec(job: Pick<Job, 'started_at' | 'finished_at'>): number | null {
  if (job.started_at === null || job.finished_at === null) return null;
  const ms = Date.parse(job.finished_at) - Date.parse(job.started_at);
  return Number.isFinite(ms) ? Math.max(0, ms) / 1000 : null;
}

export const csvHeaderLine = (): string => `${RUN_CSV_COLUMNS.join(',')}\r\n`;

export function csvJobLine(job: Job): string {
  const cells = [
    csvCell(job.client_id),
    csvCell(job.client_name),
    csvCell(job.status),
    csvCell(job.exit_code, false),
    csvCell(job.started_at, false),
    csvCell(job.finished_at, false),
    csvCell(durationSec(job), false),
    csvCell(job.error),
    csvCell(job.result.stdout),
    csvCell(job.result.stderr),
  ];
  return `${cells.join(',')}\r\n`;
}

/** Reads one page of children: offset and limit in the run's order (created_at, then jid). */
export type ChildPage = (offset: number, limit: number) => Promise<Job[]>;

/** The header, then one chunk of lines per page of children, until a page comes back short. */
export async function* runCsv(page: ChildPage, pageSize = EXPORT_PAGE): AsyncGenerator<string> {
  yield csvHeaderLine();
  for (let offset = 0; ; offset += pageSize) {
    const jobs = await page(offset, pageSize);
    if (jobs.length > 0) yield jobs.map(csvJobLine).join('');
    if (jobs.length < pageSize) return;
  }
}
