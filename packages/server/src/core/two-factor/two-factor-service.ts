import type { LoginData, VerifyTwoFaBody } from '@svc/protocol';
import type { Authenticator, Caller } from '../auth/authenticator.js';
import type { Clock } from '../auth/ports.js';
import type { UserRecord } from '../users/user-store.js';
import { twoFactorErrors } from './errors.js';
import { codeMatches, hashCode, newCode } from './one-time-code.js';
import {
  CodeDeliveryError,
  type CodeDelivery,
  type PendingLoginStore,
  type TotpAlgorithm,
  type TotpSecretStore,
} from './ports.js';
import type { SendToPolicy } from './send-to-policy.js';

/** Wrong codes allowed per login token; then the login must start again. */
export const MAX_ATTEMPTS = 5;

export type SecondFactor =
  | { kind: 'delivery'; delivery: CodeDelivery; policy: SendToPolicy; codeTtlMs: number }
  | { kind: 'totp'; secrets: TotpSecretStore; algorithm: TotpAlgorithm };

export interface TwoFactorDeps {
  auth: Authenticator;
  factor: SecondFactor;
  pending: PendingLoginStore;
  clock: Clock;
  /** `[api] totp_login_session_ttl`: lifetime of a login token. */
  loginSessionTtlMs: number;
  /** Where a failed delivery is logged with its full reason. */
  onDeliveryFailure?: (username: string, err: unknown) => void;
}

export interface Requester {
  ip: string;
  userAgent: string;
}

/**
 * Two-factor login (spec 5.3, 5.4, 3 "Login session with 2FA"): after the password, GET /login issues a login
 * token and (delivery mode) sends a code; POST /verify-2fa with that token and the code issues the auth token.
 * A pending login lives in the database next to the login token's session, so it survives on any svcd node.
 */
export class TwoFactorService {
  constructor(private readonly deps: TwoFactorDeps) {}

  get mode(): SecondFactor['kind'] {
    return this.deps.factor.kind;
  }

  /** Second half of GET /login, after the password was checked. */
  async startLogin(
    user: UserRecord,
    tokenLifetimeS: number | undefined,
    requester: Requester,
  ): Promise<LoginData> {
    const { auth, factor, clock } = this.deps;
    auth.tokenLifetimeMs(tokenLifetimeS); // refuse a bad token-lifetime before a code goes out
    if (factor.kind === 'delivery') {
      const sendTo = user.twoFaSendTo ?? '';
      if (sendTo === '') throw twoFactorErrors.sendToMissing(user.username);
      const problem = factor.policy.problem(sendTo);
      if (problem !== undefined)
        throw twoFactorErrors.sendToInvalid(user.username, `two_fa_send_to ${problem}`);
    }
    const issued = await auth.issue(user.username, this.deps.loginSessionTtlMs, 'login');
    const sessionId = issued.sessionId;
    const now = clock.now();
    const code = factor.kind === 'delivery' ? newCode() : undefined;
    await this.deps.pending.create({
      sessionId,
      username: user.username,
      codeHash: code === undefined ? null : hashCode(sessionId, code),
      codeExpiresAt: factor.kind === 'delivery' ? new Date(now.getTime() + factor.codeTtlMs) : null,
      attempts: 0,
      tokenLifetimeS: tokenLifetimeS ?? null,
      expiresAt: issued.expiresAt,
    });
    if (factor.kind === 'totp') {
      const secret = await factor.secrets.find(user.username);
      return {
        token: issued.token,
        two_fa: {
          send_to: '',
          delivery_method: 'totp_authenticator_app',
          totp_key_status: secret ? 'exists' : 'pending',
        },
      };
    }
    const sendTo = user.twoFaSendTo ?? '';
    try {
      await factor.delivery.send({
        username: user.username,
        sendTo,
        code: code ?? '',
        ttlSeconds: Math.round(factor.codeTtlMs / 1000),
        requester,
      });
    } catch (err) {
      // The login token must not outlive a code that never went out.
      await this.deps.pending.consume(sessionId);
      await auth.logout(sessionId);
      this.deps.onDeliveryFailure?.(user.username, err);
      throw twoFactorErrors.deliveryFailed(
        err instanceof CodeDeliveryError ? err.message : 'the delivery failed unexpectedly',
      );
    }
    return {
      token: issued.token,
      two_fa: { send_to: sendTo, delivery_method: factor.delivery.method, totp_key_status: '' },
    };
  }

  /** POST /verify-2fa: the caller authenticated with a login token (its session is still active). */
  async verify(
    caller: Caller,
    body: VerifyTwoFaBody,
    tokenLifetimeS: number | undefined,
  ): Promise<LoginData> {
    const { auth, factor, pending, clock } = this.deps;
    if (caller.tokenStage !== 'login' || caller.sessionId === undefined)
      throw twoFactorErrors.loginTokenRequired();
    const sessionId = caller.sessionId;
    if (body.username !== caller.user.username) throw twoFactorErrors.usernameMismatch();
    const login = await pending.find(sessionId);
    if (!login) throw twoFactorErrors.codeUsed();
    if (!(await pending.countAttempt(sessionId, MAX_ATTEMPTS))) {
      await this.end(sessionId);
      throw twoFactorErrors.tooManyAttempts(MAX_ATTEMPTS);
    }
    const now = clock.now();
    if (factor.kind === 'delivery') {
      if (login.codeExpiresAt === null || login.codeExpiresAt <= now) {
        await this.end(sessionId);
        throw twoFactorErrors.codeExpired();
      }
      if (login.codeHash === null || !codeMatches(sessionId, body.token, login.codeHash))
        throw twoFactorErrors.codeWrong();
    } else {
      const record = await factor.secrets.find(login.username);
      if (!record) throw twoFactorErrors.secretNeededToVerify();
      const step = factor.algorithm.matchStep(record.secret, body.token, now);
      if (step === undefined || !(await factor.secrets.markUsed(login.username, step)))
        throw twoFactorErrors.codeWrong();
    }
    // Only one request completes a login, however many raced with the right code.
    if (!(await pending.consume(sessionId))) throw twoFactorErrors.codeUsed();
    await auth.logout(sessionId);
    const lifetimeMs = auth.tokenLifetimeMs(tokenLifetimeS ?? login.tokenLifetimeS ?? undefined);
    const { token } = await auth.issue(login.username, lifetimeMs, 'verified');
    return { token, two_fa: null };
  }

  /** Drops expired pending logins (their tokens have expired too). */
  purgeExpired(now: Date): Promise<number> {
    return this.deps.pending.purgeExpired(now);
  }

  private async end(sessionId: string): Promise<void> {
    await this.deps.pending.consume(sessionId);
    await this.deps.auth.logout(sessionId);
  }
}
