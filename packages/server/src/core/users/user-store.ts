import { AppError, ERROR_CODES } from '@svc/protocol';

/** A user as kept by a user store. `passwordHash` is a bcrypt hash (static mode: the configured plain password). */
export interface UserRecord {
  username: string;
  passwordHash: string;
  groups: string[];
  twoFaSendTo: string | null;
  totpSecret: string | null;
  passwordExpired: boolean;
}

export interface NewUser {
  username: string;
  passwordHash: string;
  groups: string[];
}

/** Fields a change may carry; absent fields stay as they are, `groups` replaces the whole list. */
export interface UserChanges {
  passwordHash?: string;
  groups?: string[];
  /** An empty string clears it. */
  twoFaSendTo?: string;
}

export type UserStoreKind = 'static' | 'file' | 'database';

/**
 * Where API users live (spec 5.2: exactly one store).
 * `find` and `list` answer from what is in force; for the file store that is the snapshot read at start or on
 * reload, while writes go to the file and take effect after the next reload (spec 4.3 rule 3).
 * `pending*` answer from what writes see, so the last-administrator rule checks the state a write produces.
 */
export interface UserStore {
  readonly kind: UserStoreKind;
  /** True when reads see writes at once (database); false when writes wait for a reload (file). */
  readonly writesVisibleAtOnce: boolean;
  find(username: string): Promise<UserRecord | undefined>;
  list(): Promise<UserRecord[]>;
  /** The users as writes see them (file store: the file's current content). */
  listForWrite(): Promise<UserRecord[]>;
  create(user: NewUser): Promise<void>;
  update(username: string, changes: UserChanges): Promise<void>;
  delete(username: string): Promise<void>;
  /** Re-reads the backing file; a no-op for stores that need none. */
  reload(): Promise<void>;
}

export const ADMIN_GROUP = 'Administrators';
export const isAdmin = (user: Pick<UserRecord, 'groups'>): boolean => user.groups.includes(ADMIN_GROUP);

/** Throws the 403 every Administrators-only feature answers; `what` completes "may manage …". */
export function assertAdmin(user: Pick<UserRecord, 'groups'>, what: string): void {
  if (!isAdmin(user)) {
    throw new AppError(
      'forbidden',
      ERROR_CODES.adminRequired,
      `Only members of the ${ADMIN_GROUP} group may manage ${what}`,
    );
  }
}
