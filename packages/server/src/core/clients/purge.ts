import type { ClientDirectory } from './client-directory.js';
import type { ClientsLog } from './ports.js';

export interface PurgeSettings {
  intervalMs: number;
  /** How long a disconnected client stays listed. */
  keepMs: number;
}

/** Every `intervalMs`, deletes clients disconnected longer than `keepMs`. Returns the stop function. */
export function schedulePurge(
  directory: Pick<ClientDirectory, 'purge'>,
  settings: PurgeSettings,
  log: ClientsLog,
): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    directory
      .purge(settings.keepMs)
      .then((count) => {
        if (count > 0) log.info({ count }, 'purged disconnected clients');
      })
      .catch((err: unknown) => log.warn({ err }, 'purging disconnected clients failed'))
      .finally(() => (running = false));
  }, settings.intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
