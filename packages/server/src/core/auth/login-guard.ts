import { AppError, ERROR_CODES } from '@svc/protocol';
import type { Clock } from './ports.js';
import { userAtAddressKey, type LoginThrottleStore, type UserAtAddress } from './login-throttle-store.js';

export interface LoginGuardSettings {
  /** Consecutive failures from one address before it is banned; 0 disables the ban. */
  maxFailedLogin: number;
  banTimeMs: number;
  /** How long a username is refused from an address after a failed login from there. */
  userLoginWaitMs: number;
  /** Failed guesses at one user's password, from all addresses, per window before unknown addresses are refused; 0 = no ceiling. */
  userGuessCeiling?: number;
  userGuessWindowMs?: number;
  /** A user's address stays known this long after a successful login from it. */
  knownAddressForMs?: number;
}

/** The per-user ceiling: not configuration keys (the reference has none), documented in the README. */
export const USER_GUESS_CEILING = 30;
export const USER_GUESS_WINDOW_MS = 15 * 60_000;
export const KNOWN_ADDRESS_FOR_MS = 30 * 24 * 3600_000;
/** An address's failures in a row are forgotten after a day without one. */
const ADDRESS_FAILURES_KEPT_MS = 24 * 3600_000;

const secondsUntil = (until: number, now: number): string => `${Math.ceil((until - now) / 1000)} s`;

/**
 * Brute-force protection for password checks (not for API tokens or JWTs: their secrets cannot be guessed).
 * - An address with `maxFailedLogin` failures in a row, whatever users they named, is banned for `banTimeMs` (423).
 * - After a failure, that user from that address waits `userLoginWaitMs` (429). Other addresses are not slowed
 *   down, so a guesser elsewhere cannot keep the user from logging in.
 * - Each user takes at most `userGuessCeiling` failures per `userGuessWindowMs` from all addresses together;
 *   beyond it, addresses the user has not logged in from within `knownAddressForMs` are refused (429) until the
 *   window ends, while the user's known addresses keep working.
 * A success from an address resets its failures and makes it known for that user.
 */
export class LoginGuard {
  private readonly ceiling: number;
  private readonly windowMs: number;
  private readonly knownForMs: number;

  constructor(
    private readonly settings: LoginGuardSettings,
    private readonly clock: Clock,
    private readonly store: LoginThrottleStore,
  ) {
    this.ceiling = settings.userGuessCeiling ?? USER_GUESS_CEILING;
    this.windowMs = settings.userGuessWindowMs ?? USER_GUESS_WINDOW_MS;
    this.knownForMs = settings.knownAddressForMs ?? KNOWN_ADDRESS_FOR_MS;
  }

  /** Throws when the caller may not try a password now. */
  async assertMayTry(ip: string, rawUsername: string): Promise<void> {
    const username = rawUsername.normalize('NFC');
    const now = this.now();
    const address = await this.store.addresses.get(ip, now);
    if (address && address.bannedUntil > now) {
      throw new AppError(
        'banned',
        ERROR_CODES.ipBanned,
        'Too many failed logins from this address',
        `try again in ${secondsUntil(address.bannedUntil, now)}`,
      );
    }
    const here = await this.store.userAtAddress.get(userAtAddressKey(username, ip), now);
    if (here && here.retryAt > now) {
      throw new AppError(
        'throttled',
        ERROR_CODES.loginThrottled,
        'Too many login attempts for this user, please try later',
        `try again in ${secondsUntil(here.retryAt, now)}`,
      );
    }
    if (this.ceiling <= 0 || this.isKnown(here, now)) return;
    const guesses = await this.store.users.get(username, now);
    if (guesses && guesses.count >= this.ceiling) {
      throw new AppError(
        'throttled',
        ERROR_CODES.loginThrottled,
        'Too many failed logins for this user, please try later',
        `try again in ${secondsUntil(guesses.windowStart + this.windowMs, now)}, or from an address ` +
          'this user has logged in from before',
      );
    }
  }

  async recordFailure(ip: string, rawUsername: string): Promise<void> {
    const username = rawUsername.normalize('NFC');
    const now = this.now();
    const { maxFailedLogin, banTimeMs, userLoginWaitMs } = this.settings;
    if (maxFailedLogin > 0) {
      const address = (await this.store.addresses.get(ip, now)) ?? { count: 0, bannedUntil: 0 };
      address.count += 1;
      if (address.count >= maxFailedLogin) {
        address.bannedUntil = now + banTimeMs;
        address.count = 0;
      }
      const keepUntil = Math.max(address.bannedUntil, now + ADDRESS_FAILURES_KEPT_MS);
      await this.store.addresses.set(ip, address, keepUntil, now);
    }
    if (userLoginWaitMs > 0) {
      const key = userAtAddressKey(username, ip);
      const here = (await this.store.userAtAddress.get(key, now)) ?? { retryAt: 0, lastSuccessAt: 0 };
      here.retryAt = now + userLoginWaitMs;
      await this.store.userAtAddress.set(key, here, this.keepUntil(here), now);
    }
    if (this.ceiling > 0) {
      const current = await this.store.users.get(username, now);
      const guesses =
        current && current.windowStart + this.windowMs > now ? current : { windowStart: now, count: 0 };
      guesses.count += 1;
      await this.store.users.set(username, guesses, guesses.windowStart + this.windowMs, now);
    }
  }

  /** The failures of the user's guessers elsewhere still count towards its ceiling. */
  async recordSuccess(ip: string, rawUsername: string): Promise<void> {
    const username = rawUsername.normalize('NFC');
    const now = this.now();
    await this.store.addresses.delete(ip);
    const here = { retryAt: 0, lastSuccessAt: now };
    await this.store.userAtAddress.set(userAtAddressKey(username, ip), here, this.keepUntil(here), now);
  }

  private isKnown(here: UserAtAddress | undefined, now: number): boolean {
    return here !== undefined && here.lastSuccessAt > 0 && here.lastSuccessAt + this.knownForMs > now;
  }

  private keepUntil(here: UserAtAddress): number {
    return Math.max(here.retryAt, here.lastSuccessAt > 0 ? here.lastSuccessAt + this.knownForMs : 0);
  }

  private now(): number {
    return this.clock.now().getTime();
  }
}
