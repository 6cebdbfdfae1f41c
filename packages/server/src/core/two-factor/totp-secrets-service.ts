import { AppError, ERROR_CODES, type TotpSecretResponse } from '@svc/protocol';
import type { Caller } from '../auth/authenticator.js';
import type { Clock } from '../auth/ports.js';
import { assertAdmin, type UserRecord } from '../users/user-store.js';
import { twoFactorErrors } from './errors.js';
import type { QrEncoder, TotpAlgorithm, TotpSecretStore } from './ports.js';

export interface TotpSecretsDeps {
  /** False unless `[api] totp_enabled`: then every endpoint answers 400. */
  enabled: boolean;
  secrets: TotpSecretStore;
  algorithm: TotpAlgorithm;
  qr: QrEncoder;
  /** `[api] totp_account_name`: the issuer an app shows next to the user name. */
  accountName: string;
  findUser: (username: string) => Promise<UserRecord | undefined>;
  clock: Clock;
}

/** The TOTP secret endpoints (spec 4.2, 5.4, 3 "TOTP key status"). */
export class TotpSecretsService {
  constructor(private readonly deps: TotpSecretsDeps) {}

  /** POST /me/totp-secret: once per user; the login token of GET /login may call it (spec 5.4.3). */
  async create(caller: Caller): Promise<TotpSecretResponse> {
    this.assertEnabled();
    const { secrets, algorithm, clock } = this.deps;
    const username = caller.user.username;
    const secret = algorithm.newSecret();
    const created = await secrets.create({ username, secret, lastUsedStep: null, createdAt: clock.now() });
    if (!created) throw twoFactorErrors.secretExists();
    return this.response(username, secret);
  }

  /** GET /me/totp-secret (auth token). */
  async get(caller: Caller): Promise<TotpSecretResponse> {
    this.assertEnabled();
    const record = await this.deps.secrets.find(caller.user.username);
    if (!record) throw twoFactorErrors.secretMissing();
    return this.response(record.username, record.secret);
  }

  /** DELETE /me/totp-secret (auth token only; the auth hook refuses login tokens). */
  async deleteOwn(caller: Caller): Promise<void> {
    this.assertEnabled();
    if (!(await this.deps.secrets.delete(caller.user.username))) throw twoFactorErrors.secretMissing();
  }

  /** DELETE /users/{username}/totp-secret: an Administrators member with a token from /verify-2fa (spec 5.6.3). */
  async deleteFor(caller: Caller, username: string): Promise<void> {
    assertAdmin(caller.user, "other users' TOTP secrets");
    this.assertEnabled();
    if (caller.tokenStage !== 'verified') throw twoFactorErrors.verifiedTokenRequired();
    const user = await this.deps.findUser(username);
    if (!user) throw new AppError('not_found', ERROR_CODES.userNotFound, `User '${username}' not found`);
    if (!(await this.deps.secrets.delete(user.username))) throw twoFactorErrors.secretMissing();
  }

  private async response(username: string, secret: string): Promise<TotpSecretResponse> {
    const uri = this.deps.algorithm.uri(secret, this.deps.accountName, username);
    return { secret, qr: await this.deps.qr.png(uri) };
  }

  private assertEnabled(): void {
    if (!this.deps.enabled) throw twoFactorErrors.totpDisabled();
  }
}
