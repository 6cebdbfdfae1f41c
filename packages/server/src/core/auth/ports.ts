/** bcrypt, off the event loop. */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** Constant-time check; false (never a throw) for a malformed hash. */
  verify(password: string, hash: string): Promise<boolean>;
}

/**
 * What a token stands for in a two-factor login: `login` = password checked, second factor due (usable only on
 * /verify-2fa and, in authenticator-app mode, POST /me/totp-secret); `verified` = issued by /verify-2fa. Absent on
 * tokens issued while no second factor is configured.
 */
export type TokenStage = 'login' | 'verified';

export interface TokenClaims {
  username: string;
  stage?: TokenStage;
  /** Session id: the row that makes the token valid; logout deletes it. */
  sessionId: string;
  issuedAt: Date;
  expiresAt: Date;
}

/** Signs and verifies API tokens (JWT HS256, algorithm pinned). */
export interface TokenSigner {
  sign(claims: TokenClaims): Promise<string>;
  /** Returns undefined for anything that is not a valid, unexpired token of ours. */
  verify(token: string): Promise<TokenClaims | undefined>;
}

export interface SessionRecord {
  id: string;
  username: string;
  createdAt: Date;
  expiresAt: Date;
}

/** Server-side record of issued tokens, so logout can revoke one and several nodes agree. */
export interface SessionStore {
  create(session: SessionRecord): Promise<void>;
  /** True when the session exists and has not expired at `now`. */
  isActive(id: string, now: Date): Promise<boolean>;
  /** Deletes the session; false when there was none. */
  revoke(id: string): Promise<boolean>;
  purgeExpired(now: Date): Promise<number>;
}

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
