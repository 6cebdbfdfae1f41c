import type { ApiTokenScope } from '@svc/protocol';
import type { Clock } from '../auth/ports.js';
import type { LoginGuard } from '../auth/login-guard.js';
import type { UserRecord, UserStore } from '../users/user-store.js';
import { lookupForms } from '../users/username.js';
import { apiTokenErrors } from './api-token-errors.js';
import type { ApiTokenRepository } from './ports.js';
import { parseToken, secretMatches } from './token-secret.js';
import { TokenUseStamps } from './token-use-stamps.js';

export interface TokenCaller {
  user: UserRecord;
  apiToken: { prefix: string; scope: ApiTokenScope };
}

/**
 * Checks HTTP Basic credentials whose password has the shape of an API token (`<prefix>_<secret>`): one lookup
 * by prefix and a SHA-256, never a bcrypt. A password that only looks like a token (no token of this user has
 * that prefix) is left to the password check, and so to its throttle. A token itself is not throttled: its
 * 256-bit secret cannot be guessed, and a guesser of the user's password must not lock its tokens out. A wrong
 * secret still counts as a failed login.
 */
export class ApiTokenChecker {
  private readonly stamps: TokenUseStamps;

  constructor(
    private readonly tokens: ApiTokenRepository,
    private readonly users: UserStore,
    private readonly guard: LoginGuard,
    private readonly clock: Clock,
    private readonly badCredentials: () => Error,
  ) {
    this.stamps = new TokenUseStamps(tokens, clock);
  }

  /** The caller for a valid token of `username`; undefined when the password is not one of its tokens. */
  async check(username: string, password: string, ip: string): Promise<TokenCaller | undefined> {
    const presented = parseToken(password);
    if (!presented) return undefined;
    const record = await this.tokens.findByPrefix(presented.prefix);
    if (!record || !lookupForms(username).includes(record.username)) return undefined;
    if (!secretMatches(presented.secret, record.secretHash)) return await this.fail(ip, username);
    if (record.expiresAt.getTime() <= this.clock.now().getTime()) throw apiTokenErrors.expired(record.prefix);
    // Groups come from the user store on every request, as for Bearer tokens.
    const user = await this.users.find(record.username);
    if (!user) return await this.fail(ip, username);
    await this.guard.recordSuccess(ip, username);
    await this.stamps.used(record);
    return { user, apiToken: { prefix: record.prefix, scope: record.scope } };
  }

  private async fail(ip: string, username: string): Promise<never> {
    await this.guard.recordFailure(ip, username);
    throw this.badCredentials();
  }
}
