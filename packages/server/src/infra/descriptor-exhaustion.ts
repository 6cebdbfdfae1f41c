import type { Server } from 'node:net';
import { isDescriptorExhaustion, type Logger } from '@svc/platform';
import { LogThrottle } from '../core/log-throttle.js';

const INTERVAL_MS = 60_000;

/**
 * Reports that svcd ran out of descriptors (EMFILE, ENFILE) at most once a minute per place, with how many
 * times it happened in between: at the limit every accept and every file open fails, many times a second.
 */
export class DescriptorExhaustionLog {
  private readonly throttle = new LogThrottle(INTERVAL_MS, 100);

  constructor(private readonly log: Logger) {}

  /** Logs `err` if it is an exhaustion and returns true; false (nothing logged) for any other error. */
  report(where: string, err: unknown): boolean {
    if (!isDescriptorExhaustion(err)) return false;
    const heldBack = this.throttle.admit(where);
    if (heldBack === undefined) return true;
    this.log.warn(
      { where, code: (err as { code: string }).code, held_back: heldBack },
      'out of file descriptors: raise the limit (LimitNOFILE=) or spread the agents over more svcd nodes',
    );
    return true;
  }
}

/**
 * Keeps a listening server up when an accept fails. Node emits the failure as the server's 'error', which
 * without a listener ends the process; libuv mostly drops the waiting connections itself when out of descriptors
 * and emits nothing, but not always. Attach once listening (before, 'error' is a failed listen).
 */
export function keepAccepting(
  server: Server,
  where: string,
  exhaustion: DescriptorExhaustionLog,
  log: Logger,
) {
  server.on('error', (err) => {
    if (!exhaustion.report(where, err)) log.error({ err, where }, 'listener error');
  });
}
