import { createHash, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../auth/ports.js';
import type { ClientAuthenticator } from '../clients/ports.js';
import type { ClientAuthStore } from './client-auth-store.js';

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/** Constant-time: both sides are hashed to equal length first, so neither content nor length leaks. */
export function passwordsMatch(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

const SWEEP_AT = 10_000;

export type ClientLoginOutcome = 'ok' | 'wrong_credentials' | 'throttled';

/**
 * Checks an agent's credential. After a failure, that client-auth id is refused for `client_login_wait`, so
 * passwords cannot be guessed at handshake speed.
 */
export class ClientCredentialChecker implements ClientAuthenticator {
  private readonly blockedUntil = new Map<string, number>();

  constructor(
    private readonly store: ClientAuthStore,
    private readonly loginWaitMs: number,
    private readonly clock: Clock,
  ) {}

  /** The gateway's port: true only for a right password on an id that is not waiting out a failure. */
  async verify(authId: string, password: string): Promise<boolean> {
    return (await this.check(authId, password)) === 'ok';
  }

  async check(authId: string, password: string): Promise<ClientLoginOutcome> {
    const now = this.clock.now().getTime();
    const until = this.blockedUntil.get(authId);
    if (until !== undefined && until > now) return 'throttled';
    if (until !== undefined) this.blockedUntil.delete(authId);
    const credential = await this.store.get(authId);
    const ok = passwordsMatch(password, credential?.password ?? '') && credential !== undefined;
    if (ok) return 'ok';
    if (this.loginWaitMs > 0) {
      if (this.blockedUntil.size >= SWEEP_AT) this.forgetExpired(now);
      this.blockedUntil.set(authId, now + this.loginWaitMs);
    }
    return 'wrong_credentials';
  }

  /** Unknown ids tried once stay in the map until they expire; a scan of many ids must not grow it forever. */
  private forgetExpired(now: number): void {
    for (const [id, until] of this.blockedUntil) if (until <= now) this.blockedUntil.delete(id);
  }
}

/** Used when `[server]` names no credential source: every agent login is refused. */
export const refuseAllClients: ClientAuthenticator = { verify: () => Promise.resolve(false) };
