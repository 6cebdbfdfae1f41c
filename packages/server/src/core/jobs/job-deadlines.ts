import type { JobsService } from './jobs-service.js';

/** How often svcd looks for jobs whose result is overdue. */
export const DEADLINE_SWEEP_INTERVAL_MS = 10_000;

/**
 * Ends jobs whose result never came (their agent died, or its result was lost), and queued jobs whose queue_ttl
 * passed: at start, which catches jobs an earlier svcd left, and then every `intervalMs`. Returns a function that stops it.
 */
export function sweepJobDeadlines(
  jobs: Pick<JobsService, 'expireOverdue' | 'expireQueued'>,
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void },
  intervalMs = DEADLINE_SWEEP_INTERVAL_MS,
): () => void {
  let sweeping = false;
  const sweep = () => {
    if (sweeping) return;
    sweeping = true;
    jobs
      .expireOverdue()
      .then(async (ended) => {
        if (ended > 0)
          log.info({ jobs: ended }, 'jobs presumed unknown: no result came before their deadline');
        const expired = await jobs.expireQueued();
        if (expired > 0)
          log.info({ jobs: expired }, 'queued jobs expired: their clients did not connect within queue_ttl');
      })
      .catch((err: unknown) => log.warn({ err }, 'looking for overdue jobs failed; trying again later'))
      .finally(() => (sweeping = false));
  };
  sweep();
  const timer = setInterval(sweep, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
