import { randomUUID } from 'node:crypto';
import {
  AppError,
  ERROR_CODES,
  PASSWORD_MAX_BYTES,
  passwordByteLength,
  type ApiTokenScope,
} from '@svc/protocol';
import { ApiTokenChecker } from '../api-tokens/token-checker.js';
import type { ApiTokenRepository } from '../api-tokens/ports.js';
import type { UserRecord, UserStore } from '../users/user-store.js';
import { lookupForms } from '../users/username.js';
import type { LoginGuard } from './login-guard.js';
import type { Clock, PasswordHasher, SessionStore, TokenSigner, TokenStage } from './ports.js';

export const DEFAULT_TOKEN_LIFETIME_S = 600;

export interface AuthenticatorDeps {
  users: UserStore;
  hasher: PasswordHasher;
  tokens: TokenSigner;
  sessions: SessionStore;
  guard: LoginGuard;
  clock: Clock;
  maxTokenLifetimeMs: number;
  /** A second factor is configured: HTTP Basic with a password is accepted only by /login (spec 5.3.4). */
  secondFactor?: boolean;
  /** Personal API tokens, accepted as the Basic password by `checkBasic`. */
  apiTokens?: ApiTokenRepository;
}

export interface TokenCheckOptions {
  /** The route accepts a login token (second factor still due): /verify-2fa and POST /me/totp-secret. */
  acceptLoginToken?: boolean;
}

export interface Caller {
  user: UserRecord;
  /** Set when the caller used a bearer token. */
  sessionId?: string;
  /** Two-factor stage of the bearer token, when it has one. */
  tokenStage?: TokenStage;
  /** Set when the caller used a personal API token; its scope limits the routes (token-scope.ts). */
  apiToken?: { prefix: string; scope: ApiTokenScope };
}

export interface IssuedToken {
  token: string;
  sessionId: string;
  expiresAt: Date;
}

export const badCredentials = (): AppError =>
  new AppError('unauthenticated', ERROR_CODES.badCredentials, 'Wrong username or password');
const badToken = () =>
  new AppError(
    'unauthenticated',
    ERROR_CODES.badToken,
    'The token is invalid, expired or revoked',
    'log in again',
  );
const loginTokenOnly = () =>
  new AppError(
    'unauthenticated',
    ERROR_CODES.loginTokenOnly,
    'A login token only completes the second factor',
    'send the code with POST /api/v1/verify-2fa and use the token it returns',
  );
const passwordNeedsSecondFactor = () =>
  new AppError(
    'unauthenticated',
    ERROR_CODES.secondFactorRequired,
    'Two-factor login is on: a password is accepted only by GET /login',
    'log in with GET /login and POST /verify-2fa and send the Bearer token, or use a personal API token',
  );

/** Checks passwords and tokens; issues and revokes tokens. */
export class Authenticator {
  /** A hash of a secret nobody knows, checked for unknown usernames so timing does not reveal which exist. */
  private unknownUserHash: Promise<string> | undefined;

  private readonly apiTokens: ApiTokenChecker | undefined;

  constructor(private readonly deps: AuthenticatorDeps) {
    this.apiTokens =
      deps.apiTokens &&
      new ApiTokenChecker(deps.apiTokens, deps.users, deps.guard, deps.clock, badCredentials);
  }

  /** HTTP Basic on API routes: the password may be a personal API token (checked without bcrypt). */
  async checkBasic(username: string, password: string, ip: string): Promise<Caller> {
    const viaToken = await this.apiTokens?.check(username, password, ip);
    return viaToken ?? { user: await this.checkRequestPassword(username, password, ip) };
  }

  /**
   * Logins name the user exactly (in any Unicode normal form): `ADMIN` is not `admin`.
   * A password longer than bcrypt's 72 bytes is a wrong password, though its first 72 bytes would match the
   * hash: such a password cannot be set, so accepting it would let anything be appended to the real one. It still
   * goes through the same hash check and failure path, so neither timing nor answer tells it apart.
   */
  async checkPassword(username: string, password: string, ip: string): Promise<UserRecord> {
    const { guard, hasher } = this.deps;
    await guard.assertMayTry(ip, username);
    const user = username ? await this.findUser(username) : undefined;
    this.unknownUserHash ??= hasher.hash(randomUUID());
    const matches = await hasher.verify(password, user?.passwordHash ?? (await this.unknownUserHash));
    const ok = matches && passwordByteLength(password) <= PASSWORD_MAX_BYTES;
    if (!user || !ok) {
      await guard.recordFailure(ip, username);
      throw badCredentials();
    }
    await guard.recordSuccess(ip, username);
    return user;
  }

  /** HTTP Basic on any route but /login: with a second factor configured a password alone is not enough. */
  async checkRequestPassword(username: string, password: string, ip: string): Promise<UserRecord> {
    if (this.deps.secondFactor) throw passwordNeedsSecondFactor();
    return this.checkPassword(username, password, ip);
  }

  private async findUser(username: string): Promise<UserRecord | undefined> {
    for (const form of lookupForms(username)) {
      const user = await this.deps.users.find(form);
      if (user) return user;
    }
    return undefined;
  }

  async login(user: UserRecord, lifetimeSeconds: number | undefined): Promise<IssuedToken> {
    return this.issue(user.username, this.tokenLifetimeMs(lifetimeSeconds));
  }

  /** The lifetime a `token-lifetime` asks for, in ms; 400 beyond `max_token_lifetime`. */
  tokenLifetimeMs(lifetimeSeconds: number | undefined): number {
    const lifetimeMs = (lifetimeSeconds ?? DEFAULT_TOKEN_LIFETIME_S) * 1000;
    if (lifetimeMs > this.deps.maxTokenLifetimeMs) {
      throw new AppError(
        'invalid',
        ERROR_CODES.invalidQuery,
        'token-lifetime is too long',
        `the maximum is ${Math.floor(this.deps.maxTokenLifetimeMs / 1000)} seconds ([api] max_token_lifetime)`,
      );
    }
    return lifetimeMs;
  }

  /** Starts a session of `lifetimeMs` and signs its token. */
  async issue(username: string, lifetimeMs: number, stage?: TokenStage): Promise<IssuedToken> {
    const issuedAt = this.deps.clock.now();
    // A JWT carries whole seconds: rounding the end up to the next second makes the token live at least the
    // lifetime asked for (rounding down left a 1 s token a few milliseconds) and keeps it equal to the session's.
    const expiresAt = new Date(Math.ceil((issuedAt.getTime() + lifetimeMs) / 1000) * 1000);
    const sessionId = randomUUID();
    await this.deps.sessions.create({
      id: sessionId,
      username,
      createdAt: issuedAt,
      expiresAt,
    });
    const token = await this.deps.tokens.sign({
      username,
      sessionId,
      issuedAt,
      expiresAt,
      ...(stage ? { stage } : {}),
    });
    return { token, sessionId, expiresAt };
  }

  async checkToken(token: string, options: TokenCheckOptions = {}): Promise<Caller> {
    const claims = await this.deps.tokens.verify(token);
    if (!claims) throw badToken();
    if (claims.stage === 'login' && !options.acceptLoginToken) throw loginTokenOnly();
    if (!(await this.deps.sessions.isActive(claims.sessionId, this.deps.clock.now()))) throw badToken();
    // Groups come from the store on every request, so removal from Administrators takes effect at once.
    const user = await this.deps.users.find(claims.username);
    if (!user) throw badToken();
    return { user, sessionId: claims.sessionId, ...(claims.stage ? { tokenStage: claims.stage } : {}) };
  }

  /**
   * A fresh token for the Bearer session of `token` (the console renews before the end, without the password):
   * same user and two-factor stage, a new session of the old token's lifetime (or `lifetimeSeconds`), and the
   * old session revoked first, so a token renews at most once. A login token (second factor still due) is
   * refused by checkToken before this is reached.
   */
  async renew(token: string, lifetimeSeconds: number | undefined): Promise<IssuedToken> {
    const claims = await this.deps.tokens.verify(token);
    if (!claims || claims.stage === 'login') throw badToken();
    const lifetimeMs =
      lifetimeSeconds === undefined
        ? Math.min(claims.expiresAt.getTime() - claims.issuedAt.getTime(), this.deps.maxTokenLifetimeMs)
        : this.tokenLifetimeMs(lifetimeSeconds);
    if (!(await this.deps.sessions.revoke(claims.sessionId))) throw badToken();
    return this.issue(claims.username, Math.max(lifetimeMs, 1000), claims.stage);
  }

  async logout(sessionId: string): Promise<void> {
    await this.deps.sessions.revoke(sessionId);
  }
}
