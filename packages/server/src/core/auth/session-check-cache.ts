import { BoundedMap } from '../bounded-map.js';
import type { SessionRecord, SessionStore } from './ports.js';

export interface SessionCacheSettings {
  /** How long a positive answer is reused. Bounds how late another node's logout is seen here. */
  ttlMs: number;
  maxEntries: number;
}

const DEFAULTS: SessionCacheSettings = { ttlMs: 2000, maxEntries: 10_000 };

/**
 * A SessionStore that remembers recent "this session is active" answers for a moment, so a burst of requests
 * with one token reads the session row once. A revocation through this store takes effect at once; one made on
 * another svcd node sharing the database is seen here within `ttlMs`. The token's own expiry, which equals the
 * session's, is checked on every request before this store is asked.
 */
export class CachedSessionStore implements SessionStore {
  /** Session id → when the store last said it was active (epoch ms). */
  private readonly checkedAt: BoundedMap<string, number>;
  private readonly settings: SessionCacheSettings;

  constructor(
    private readonly store: SessionStore,
    settings: Partial<SessionCacheSettings> = {},
  ) {
    this.settings = { ...DEFAULTS, ...settings };
    this.checkedAt = new BoundedMap(this.settings.maxEntries);
  }

  create(session: SessionRecord): Promise<void> {
    return this.store.create(session);
  }

  async isActive(id: string, now: Date): Promise<boolean> {
    const at = now.getTime();
    const checked = this.checkedAt.get(id);
    if (checked !== undefined && at - checked < this.settings.ttlMs) return true;
    this.checkedAt.delete(id);
    if (!(await this.store.isActive(id, now))) return false;
    this.checkedAt.set(id, at);
    return true;
  }

  revoke(id: string): Promise<boolean> {
    this.checkedAt.delete(id);
    return this.store.revoke(id);
  }

  purgeExpired(now: Date): Promise<number> {
    return this.store.purgeExpired(now);
  }
}
