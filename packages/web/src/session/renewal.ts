import { apiRequest } from '../api/client.js';
import type { LoginData } from '../api/types.js';
import { tokenExpiry, tokenIssuedAt } from '../lib/jwt.js';
import { session, type Session } from './session.js';

/**
 * Renewal starts this long before the token ends (half the lifetime for tokens shorter than twice this). Two
 * minutes, not one: a hidden tab's timers may fire up to a minute late (Chrome's throttling of background tabs).
 */
export const RENEW_BEFORE_MS = 120_000;

/** When to renew a session: two minutes before its end, or halfway through a short token's life. */
export function renewalTime(current: Pick<Session, 'expiresAt' | 'issuedAt'>): number {
  const lifetime = current.issuedAt === undefined ? Infinity : current.expiresAt - current.issuedAt;
  return current.expiresAt - Math.min(RENEW_BEFORE_MS, lifetime / 2);
}

/**
 * Trades the session's token for a fresh one (POST /me/token-renewal: same lifetime, no password or second
 * factor; the old token is revoked by svcd). A 401 ends the session as expired (apiRequest), so the login page
 * brings the operator back to this page.
 */
export async function renewSession(): Promise<void> {
  const current = session.get();
  if (!current) return;
  const { data } = await apiRequest<{ data: LoginData }>('/me/token-renewal', { method: 'POST' });
  session.start({
    token: data.token,
    username: current.username,
    expiresAt: tokenExpiry(data.token) ?? current.expiresAt,
    ...(tokenIssuedAt(data.token) === undefined ? {} : { issuedAt: tokenIssuedAt(data.token) }),
  });
}
