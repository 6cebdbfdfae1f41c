import type { Clock } from '../auth/ports.js';
import type { AuditLogger, AuditRepository } from './ports.js';

const DAY_MS = 86_400_000;

/** Deletes the records older than `retentionDays` at the clock's now; 0 days keeps everything. */
export async function purgeAuditLog(
  repository: AuditRepository,
  retentionDays: number,
  clock: Clock,
): Promise<number> {
  if (retentionDays <= 0) return 0;
  return repository.purgeBefore(new Date(clock.now().getTime() - retentionDays * DAY_MS));
}

/** Purges once soon after start, then daily; returns the stop function. */
export function scheduleAuditPurge(
  repository: AuditRepository,
  retentionDays: number,
  clock: Clock,
  log: AuditLogger,
  firstDelayMs = 60_000,
): () => void {
  if (retentionDays <= 0) return () => undefined;
  const run = () => {
    purgeAuditLog(repository, retentionDays, clock).then(
      (purged) => {
        if (purged > 0) log.info({ purged, retention_days: retentionDays }, 'audit log purged');
      },
      (err: unknown) => log.warn({ err }, 'audit log purge failed'),
    );
  };
  const first = setTimeout(run, firstDelayMs);
  first.unref();
  const daily = setInterval(run, DAY_MS);
  daily.unref();
  return () => {
    clearTimeout(first);
    clearInterval(daily);
  };
}
