import { AppError, ERROR_CODES } from '@svc/protocol';
import { ADMIN_GROUP, type UserRecord, type UserStore } from '../core/users/user-store.js';

/** `[api] auth = "user:password"`: one user, member of Administrators, read-only. */
export function createStaticUserStore(username: string, passwordHash: string): UserStore {
  const user: UserRecord = {
    username,
    passwordHash,
    groups: [ADMIN_GROUP],
    twoFaSendTo: null,
    totpSecret: null,
    passwordExpired: false,
  };
  const readOnly = (): Promise<never> =>
    Promise.reject(
      new AppError('invalid', ERROR_CODES.staticUserStore, 'The single static user cannot be changed'),
    );
  return {
    kind: 'static',
    writesVisibleAtOnce: true,
    find: (name) => Promise.resolve(name === username ? user : undefined),
    list: () => Promise.resolve([user]),
    listForWrite: () => Promise.resolve([user]),
    create: readOnly,
    update: readOnly,
    delete: readOnly,
    reload: () => Promise.resolve(),
  };
}
