import { AppError, ERROR_CODES, type UserTwoFa } from '@svc/protocol';
import type { PasswordHasher } from '../auth/ports.js';
import { ADMIN_GROUP, assertAdmin, isAdmin, type UserRecord, type UserStore } from './user-store.js';
import { checkSendTo, type SendToRule } from './send-to-rule.js';
import { findLookAlike, lookupForms, userExistsError } from './username.js';

export interface UserInput {
  username: string;
  password: string;
  groups?: string[];
  two_fa_send_to?: string;
}

export interface UserUpdate {
  password?: string;
  groups?: string[];
  two_fa_send_to?: string;
}

export interface UserListItem {
  username: string;
  groups: string[];
}

export interface WriteOutcome {
  /** False for the file store: the change is in the file and takes effect after a reload (SIGUSR1) or restart. */
  inEffect: boolean;
  /** The user as the write left it (after a delete: as it was). */
  user: UserListItem;
}

/** The user API's rules (spec 4.3); callers must be Administrators members. */
export class UsersService {
  constructor(
    private readonly store: UserStore,
    private readonly hasher: PasswordHasher,
    private readonly sendToRule?: SendToRule,
    /** Removes what belongs to a deleted user elsewhere (API tokens, TOTP secret, pending 2FA logins), so a new user of that name starts clean. */
    private readonly onDeleted: (username: string) => Promise<unknown> = () => Promise.resolve(),
    /** Each user's second-factor state (GET /users); none when svcd has no second factor. */
    private readonly twoFaOf: (user: UserRecord) => Promise<UserTwoFa> = () =>
      Promise.resolve({ enabled: false, method: null }),
  ) {}

  async list(caller: UserRecord): Promise<(UserListItem & { two_fa: UserTwoFa })[]> {
    this.assertMayManage(caller);
    const users = await this.store.list();
    return Promise.all(
      users.map(async (u) => ({
        username: u.username,
        groups: [...u.groups],
        two_fa: await this.twoFaOf(u),
      })),
    );
  }

  async create(caller: UserRecord, input: UserInput): Promise<WriteOutcome> {
    this.assertMayManage(caller);
    const existing = await this.store.listForWrite();
    const taken = findLookAlike(
      existing.map((u) => u.username),
      input.username,
    );
    if (taken !== undefined) throw userExistsError(input.username, taken);
    const twoFaSendTo = checkSendTo(this.sendToRule, input.two_fa_send_to, true);
    const passwordHash = await this.hasher.hash(input.password);
    const groups = uniqueGroups(input.groups ?? []);
    await this.store.create({
      username: input.username,
      passwordHash,
      groups,
      ...(twoFaSendTo ? { twoFaSendTo } : {}),
    });
    return this.outcome({ username: input.username, groups });
  }

  async update(caller: UserRecord, username: string, changes: UserUpdate): Promise<WriteOutcome> {
    this.assertMayManage(caller);
    if (
      changes.password === undefined &&
      changes.groups === undefined &&
      changes.two_fa_send_to === undefined
    ) {
      throw new AppError(
        'invalid',
        ERROR_CODES.nothingToChange,
        'Nothing to change',
        'send password, groups and/or two_fa_send_to; groups replaces the whole list',
      );
    }
    const twoFaSendTo = checkSendTo(this.sendToRule, changes.two_fa_send_to, false);
    const users = await this.store.listForWrite();
    const target = findOrThrow(users, username);
    const groups = changes.groups === undefined ? undefined : uniqueGroups(changes.groups);
    if (groups && isAdmin(target) && !groups.includes(ADMIN_GROUP))
      assertAnotherAdmin(users, target.username, `removed from ${ADMIN_GROUP}`);
    const passwordHash =
      changes.password === undefined ? undefined : await this.hasher.hash(changes.password);
    await this.store.update(target.username, {
      ...(passwordHash === undefined ? {} : { passwordHash }),
      ...(groups === undefined ? {} : { groups }),
      ...(twoFaSendTo === undefined ? {} : { twoFaSendTo: twoFaSendTo === '' ? null : twoFaSendTo }),
    });
    return this.outcome({ username: target.username, groups: groups ?? [...target.groups] });
  }

  async delete(caller: UserRecord, username: string): Promise<WriteOutcome> {
    this.assertMayManage(caller);
    const users = await this.store.listForWrite();
    const target = findOrThrow(users, username);
    if (isAdmin(target)) assertAnotherAdmin(users, target.username, 'deleted');
    await this.store.delete(target.username);
    await this.onDeleted(target.username);
    return this.outcome({ username: target.username, groups: [...target.groups] });
  }

  /**
   * Throws unless `caller` may manage users. Routes call it before reading a body, so that a non-admin gets 403
   * whatever it sent.
   */
  assertMayManage(caller: UserRecord): void {
    if (this.store.kind === 'static') {
      throw new AppError(
        'invalid',
        ERROR_CODES.staticUserStore,
        'The user API is not available with a single static user',
        'svcd runs with [api] auth = "user:password"; use [api] auth_file or database tables (auth_user_table) to manage users',
      );
    }
    assertAdmin(caller, 'users');
  }

  private outcome(user: UserListItem): WriteOutcome {
    return { inEffect: this.store.writesVisibleAtOnce, user };
  }
}

/** The user named `username` as given, or else in its NFC form (names kept by hand may be in another form). */
function findOrThrow(users: UserRecord[], username: string): UserRecord {
  let user: UserRecord | undefined;
  for (const form of lookupForms(username)) user ??= users.find((u) => u.username === form);
  if (!user) throw new AppError('not_found', ERROR_CODES.userNotFound, `User '${username}' not found`);
  return user;
}

function assertAnotherAdmin(users: UserRecord[], username: string, what: string): void {
  if (!users.some((u) => u.username !== username && isAdmin(u))) {
    throw new AppError(
      'conflict',
      ERROR_CODES.lastAdministrator,
      `The last member of ${ADMIN_GROUP} cannot be ${what}`,
      `add another user to ${ADMIN_GROUP} first`,
    );
  }
}

function uniqueGroups(groups: string[]): string[] {
  return [...new Set(groups)];
}
