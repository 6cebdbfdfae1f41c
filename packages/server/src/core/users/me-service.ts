import { AppError, ERROR_CODES, type MeData, type UpdateMeBody } from '@svc/protocol';
import type { PasswordHasher } from '../auth/ports.js';
import type { Permissions } from '../permissions/permissions.js';
import { checkSendTo, type SendToRule } from './send-to-rule.js';
import type { UserChanges, UserRecord, UserStore } from './user-store.js';

/** Which second factor this server's logins ask for. */
export interface SecondFactorMode {
  twoFaEnabled: boolean;
  totpEnabled: boolean;
}

/** Checks a user's password with the login guard (throttle and ban) in front; throws on a wrong one. */
export type PasswordCheck = (username: string, password: string, ip: string) => Promise<unknown>;

const oldPasswordRequired = () =>
  new AppError(
    'forbidden',
    ERROR_CODES.oldPasswordRequired,
    'Missing old password',
    'send old_password with the new password',
  );
const wrongOldPassword = () =>
  new AppError('forbidden', ERROR_CODES.wrongOldPassword, 'Incorrect old password', 'nothing was changed');

/** The caller's own account: GET /me and PUT /me. */
export class MeService {
  constructor(
    private readonly store: UserStore,
    private readonly hasher: PasswordHasher,
    private readonly checkPassword: PasswordCheck,
    private readonly mode: SecondFactorMode,
    private readonly permissions: Permissions,
    private readonly sendToRule?: SendToRule,
  ) {}

  async describe(caller: UserRecord): Promise<MeData> {
    return {
      username: caller.username,
      groups: [...caller.groups],
      two_fa_send_to: caller.twoFaSendTo ?? '',
      password_expired: caller.passwordExpired,
      two_fa_enabled: this.mode.twoFaEnabled || this.mode.totpEnabled,
      totp_enabled: this.mode.totpEnabled,
      effective_user_permissions: { ...(await this.permissions.effective(caller)) },
      group_permissions_enabled: this.permissions.enabled,
    };
  }

  /** Changes the caller's password and/or two_fa_send_to; `inEffect` is false for the user file (until reload). */
  async update(caller: UserRecord, body: UpdateMeBody, ip: string): Promise<{ inEffect: boolean }> {
    if (this.store.kind === 'static') {
      throw new AppError(
        'invalid',
        ERROR_CODES.staticUserStore,
        'The static user cannot be changed through the API',
        'change [api] auth in the config file, or use auth_file or database tables (auth_user_table)',
      );
    }
    if (body.password === undefined && body.two_fa_send_to === undefined) {
      throw new AppError(
        'invalid',
        ERROR_CODES.nothingToChange,
        'Nothing to change',
        'send password (with old_password) and/or two_fa_send_to',
      );
    }
    const twoFaSendTo = checkSendTo(this.sendToRule, body.two_fa_send_to, false);
    const changes: UserChanges = {};
    if (body.password !== undefined) {
      if (body.old_password === undefined) throw oldPasswordRequired();
      await this.checkOldPassword(caller.username, body.old_password, ip);
      changes.passwordHash = await this.hasher.hash(body.password);
    }
    if (twoFaSendTo !== undefined) changes.twoFaSendTo = twoFaSendTo === '' ? null : twoFaSendTo;
    await this.store.update(caller.username, changes);
    return { inEffect: this.store.writesVisibleAtOnce };
  }

  /** A wrong old password counts as a failed login (throttle, IP ban) but answers 403: the caller is logged in. */
  private async checkOldPassword(username: string, password: string, ip: string): Promise<void> {
    try {
      await this.checkPassword(username, password, ip);
    } catch (err) {
      if (err instanceof AppError && err.code === ERROR_CODES.badCredentials) throw wrongOldPassword();
      throw err;
    }
  }
}
