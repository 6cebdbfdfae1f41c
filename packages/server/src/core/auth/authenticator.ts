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
import type { Clock, PasswordHasher, SessionStore, TokenSigner } from './ports.js';

export const DEFAULT_TOKEN_LIFETIME_S = 600;

export interface AuthenticatorDeps {
  users: UserStore;
  hasher: PasswordHasher;
  tokens: TokenSigner;
  sessions: SessionStore;
  guard: LoginGuard;
  clock: Clock;
  maxTokenLifetimeMs: number;
  /** Personal API tokens, accepted as the Basic password by `checkBasic`. */
  apiTokens?: ApiTokenRepository;
}

export interface Caller {
  user: UserRecord;
  /** Set when the caller used a bearer token. */
  sessionId?: string;
  /** Set when the caller used a personal API token; its scope limits the routes (token-scope.ts). */
  apiToken?: { prefix: string; scope: ApiTokenScope };
}

export interface IssuedToken {
  token: string;
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
    return viaToken ?? { user: await this.checkPassword(username, password, ip) };
  }

  /**
   * Logins name the user exactly (in any Unicode normal form): `ADMIN` is not `admin`.
   * A password longer than bcrypt's 72 bytes is a wrong password, though its first 72 bytes would match the
   * hash: such a password cannot be set, so accepting it would let anything be appended to the real one. It still
   * goes through the same hash check and failure path, so neither timing nor answer tells it apart.
   */
  async checkPassword(username: string, password: string, ip: string): Promise<UserRecord> {
    const { guard, hasher } = this.deps;
    guard.assertMayTry(ip, username);
    const user = username ? await this.findUser(username) : undefined;
    this.unknownUserHash ??= hasher.hash(randomUUID());
    const matches = await hasher.verify(password, user?.passwordHash ?? (await this.unknownUserHash));
    const ok = matches && passwordByteLength(password) <= PASSWORD_MAX_BYTES;
    if (!user || !ok) {
      guard.recordFailure(ip, username);
      throw badCredentials();
    }
    guard.recordSuccess(ip, username);
    return user;
  }

  private async findUser(username: string): Promise<UserRecord | undefined> {
    for (const form of lookupForms(username)) {
      const user = await this.deps.users.find(form);
      if (user) return user;
    }
    return undefined;
  }

  async login(user: UserRecord, lifetimeSeconds: number | undefined): Promise<IssuedToken> {
    const lifetimeMs = (lifetimeSeconds ?? DEFAULT_TOKEN_LIFETIME_S) * 1000;
    if (lifetimeMs > this.deps.maxTokenLifetimeMs) {
      throw new AppError(
        'invalid',
        ERROR_CODES.invalidQuery,
        'token-lifetime is too long',
        `the maximum is ${Math.floor(this.deps.maxTokenLifetimeMs / 1000)} seconds ([api] max_token_lifetime)`,
      );
    }
    const issuedAt = this.deps.clock.now();
    // A JWT carries whole seconds: rounding the end up to the next second makes the token live at least the
    // lifetime asked for (rounding down left a 1 s token a few milliseconds) and keeps it equal to the session's.
    const expiresAt = new Date(Math.ceil((issuedAt.getTime() + lifetimeMs) / 1000) * 1000);
    const sessionId = randomUUID();
    await this.deps.sessions.create({
      id: sessionId,
      username: user.username,
      createdAt: issuedAt,
      expiresAt,
    });
    const token = await this.deps.tokens.sign({ username: user.username, sessionId, issuedAt, expiresAt });
    return { token, expiresAt };
  }

  async checkToken(token: string): Promise<Caller> {
    const claims = await this.deps.tokens.verify(token);
    if (!claims) throw badToken();
    if (!(await this.deps.sessions.isActive(claims.sessionId, this.deps.clock.now()))) throw badToken();
    // Groups come from the store on every request, so removal from Administrators takes effect at once.
    const user = await this.deps.users.find(claims.username);
    if (!user) throw badToken();
    return { user, sessionId: claims.sessionId };
  }

  async logout(sessionId: string): Promise<void> {
    await this.deps.sessions.revoke(sessionId);
  }
}
