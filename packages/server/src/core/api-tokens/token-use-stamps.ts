import type { Clock } from '../auth/ports.js';
import type { ApiTokenRecord, ApiTokenRepository } from './ports.js';

/** A token's last use is stored at most this often. */
export const USE_STAMP_INTERVAL_MS = 60_000;
/** Past this many tokens remembered, those not stamped within the interval are forgotten. */
const SWEEP_AT = 10_000;

/**
 * Stores when API tokens are used, throttled: a token used a thousand times a second is written about once a
 * minute. The stored time (read with the token on every request) covers other nodes; the in-memory map covers
 * the requests that read it before this node's write landed.
 */
export class TokenUseStamps {
  /** When this node last stamped each token (ms). */
  private readonly stamped = new Map<string, number>();

  constructor(
    private readonly tokens: Pick<ApiTokenRepository, 'markUsed'>,
    private readonly clock: Clock,
    private readonly intervalMs = USE_STAMP_INTERVAL_MS,
  ) {}

  /** The token was just used; stores it unless a use within the interval is stored (or being stored) already. */
  async used(token: Pick<ApiTokenRecord, 'prefix' | 'lastUsedAt'>): Promise<void> {
    const now = this.clock.now().getTime();
    const stored = token.lastUsedAt?.getTime() ?? Number.NEGATIVE_INFINITY;
    const mine = this.stamped.get(token.prefix) ?? Number.NEGATIVE_INFINITY;
    if (now - Math.max(stored, mine) < this.intervalMs) return;
    this.stamped.set(token.prefix, now);
    if (this.stamped.size > SWEEP_AT) this.sweep(now);
    try {
      await this.tokens.markUsed(token.prefix, new Date(now));
    } catch {
      // Only the "last used" figure is behind: the request itself is fine, and the next use tries again.
      this.stamped.delete(token.prefix);
    }
  }

  private sweep(now: number): void {
    for (const [prefix, at] of this.stamped) if (now - at >= this.intervalMs) this.stamped.delete(prefix);
  }
}
