import { randomBytes } from 'node:crypto';
import { AppError, ERROR_CODES, normalizeName, usernameProblem } from '@svc/protocol';
import type { UserRecord, UserStore } from '../users/user-store.js';
import { lookupForms } from '../users/username.js';
import type { PasswordHasher } from './ports.js';

export interface DelegatedLoginSettings {
  /** `[api] create_missing_users`: a user named by the proxy who does not exist yet is created. */
  createMissingUsers: boolean;
  /** `[api] default_user_group`: the group such a user gets. */
  defaultUserGroup: string;
}

/**
 * Delegated authentication (spec 5.5): a reverse proxy has already authenticated the person and names them in a
 * header; GET /login then issues the token without a password. Created users get a random password nobody
 * knows, so they can log in only through the proxy.
 */
export class DelegatedLogin {
  constructor(
    private readonly users: UserStore,
    private readonly hasher: PasswordHasher,
    private readonly settings: DelegatedLoginSettings,
  ) {}

  async userFor(name: string): Promise<UserRecord> {
    const problem = usernameProblem(name);
    if (problem !== undefined) {
      throw new AppError(
        'invalid',
        ERROR_CODES.invalidRequest,
        `The user name from the reverse proxy ${problem}`,
        `got ${JSON.stringify(name)}`,
      );
    }
    const existing = await this.find(name);
    if (existing) return existing;
    if (!this.settings.createMissingUsers) {
      throw new AppError(
        'unauthenticated',
        ERROR_CODES.delegatedUserUnknown,
        `User '${name}' named by the reverse proxy does not exist`,
        'create the user, or set [api] create_missing_users = true',
      );
    }
    const username = normalizeName(name);
    try {
      await this.users.create({
        username,
        passwordHash: await this.hasher.hash(randomBytes(32).toString('base64url')),
        groups: [this.settings.defaultUserGroup],
      });
    } catch (err) {
      // Two first logins of one person at once: the other created the user.
      if (!(err instanceof AppError && err.code === ERROR_CODES.userExists)) throw err;
    }
    const created = await this.find(username);
    if (!created) throw new AppError('internal', ERROR_CODES.internal, `User '${username}' was not created`);
    return created;
  }

  private async find(name: string): Promise<UserRecord | undefined> {
    for (const form of lookupForms(name)) {
      const user = await this.users.find(form);
      if (user) return user;
    }
    return undefined;
  }
}
