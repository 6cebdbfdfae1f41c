import { AppError, ERROR_CODES } from '@svc/protocol';
import type { Clock } from './ports.js';

export interface LoginGuardSettings {
  /** Consecutive failures from one IP before it is banned; 0 disables the ban. */
  maxFailedLogin: number;
  banTimeMs: number;
  /** How long a username is refused after a failed login. */
  userLoginWaitMs: number;
}

/** Entries older than this are forgotten, so the maps stay bounded under a scan of many IPs or names. */
const FORGET_AFTER_MS = 24 * 3600_000;
const SWEEP_EVERY = 1024;

/**
 * Brute-force protection for password checks: a short per-username wait after a failure (429) and an IP ban after
 * `maxFailedLogin` consecutive failures (423). A success resets both for that IP and username.
 * Kept in memory: a restart forgets it, as the reference does.
 */
export class LoginGuard {
  private readonly failuresByIp = new Map<string, { count: number; last: number; bannedUntil: number }>();
  private readonly blockedUsers = new Map<string, number>();
  private operations = 0;

  constructor(
    private readonly settings: LoginGuardSettings,
    private readonly clock: Clock,
  ) {}

  /** Throws when the caller may not try a password now. */
  assertMayTry(ip: string, username: string): void {
    const now = this.clock.now().getTime();
    const ipState = this.failuresByIp.get(ip);
    if (ipState && ipState.bannedUntil > now) {
      throw new AppError(
        'banned',
        ERROR_CODES.ipBanned,
        'Too many failed logins from this address',
        `try again in ${Math.ceil((ipState.bannedUntil - now) / 1000)} s`,
      );
    }
    const blockedUntil = this.blockedUsers.get(username) ?? 0;
    if (blockedUntil > now) {
      throw new AppError(
        'throttled',
        ERROR_CODES.loginThrottled,
        'Too many login attempts for this user, please try later',
        `try again in ${Math.ceil((blockedUntil - now) / 1000)} s`,
      );
    }
  }

  recordFailure(ip: string, username: string): void {
    const now = this.clock.now().getTime();
    this.sweep(now);
    if (this.settings.userLoginWaitMs > 0)
      this.blockedUsers.set(username, now + this.settings.userLoginWaitMs);
    if (this.settings.maxFailedLogin <= 0) return;
    const state = this.failuresByIp.get(ip) ?? { count: 0, last: now, bannedUntil: 0 };
    state.count += 1;
    state.last = now;
    if (state.count >= this.settings.maxFailedLogin) {
      state.bannedUntil = now + this.settings.banTimeMs;
      state.count = 0;
    }
    this.failuresByIp.set(ip, state);
  }

  recordSuccess(ip: string, username: string): void {
    this.failuresByIp.delete(ip);
    this.blockedUsers.delete(username);
  }

  private sweep(now: number): void {
    this.operations += 1;
    if (this.operations % SWEEP_EVERY !== 0) return;
    for (const [ip, state] of this.failuresByIp) {
      if (state.bannedUntil <= now && now - state.last > FORGET_AFTER_MS) this.failuresByIp.delete(ip);
    }
    for (const [name, until] of this.blockedUsers) if (until <= now) this.blockedUsers.delete(name);
  }
}
