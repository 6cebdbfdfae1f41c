import { z } from 'zod';
import { AppError, ERROR_CODES } from '@svc/protocol';
import type { NewUser, UserChanges, UserRecord, UserStore } from '../core/users/user-store.js';
import { findLookAlike, userExistsError } from '../core/users/username.js';
import { isBcryptHash } from '../infra/bcrypt-hasher.js';
import { readJsonFile, writeJsonFileAtomic } from '../infra/json-file.js';

const fileUserSchema = z.object({
  username: z.string().min(1).max(150),
  password: z.string().refine(isBcryptHash, 'must be a bcrypt hash ($2a$, $2b$ or $2y$)'),
  groups: z.array(z.string()).default([]),
  two_fa_send_to: z.string().max(150).optional(),
  totp_secret: z.string().optional(),
  password_expired: z.boolean().optional(),
});
const fileSchema = z.array(fileUserSchema);
type FileUser = z.infer<typeof fileUserSchema>;

const toRecord = (u: FileUser): UserRecord => ({
  username: u.username,
  passwordHash: u.password,
  groups: [...u.groups],
  twoFaSendTo: u.two_fa_send_to ?? null,
  totpSecret: u.totp_secret ?? null,
  passwordExpired: u.password_expired ?? false,
});

/** Reads and validates the user file; the error names the file and the entry at fault. */
async function readUserFile(path: string): Promise<FileUser[]> {
  const json = await readJsonFile(path, '[api] auth_file');
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(top level)'}: ${i.message}`);
    throw new Error(`[api] auth_file: ${path} is not a JSON array of users: ${problems.join('; ')}`);
  }
  const seen = new Set<string>();
  for (const u of parsed.data) {
    if (seen.has(u.username)) throw new Error(`[api] auth_file: ${path} lists user '${u.username}' twice`);
    seen.add(u.username);
  }
  return parsed.data;
}

/**
 * `[api] auth_file`: a JSON array of users. Reads answer from the snapshot taken at start or on reload (SIGUSR1);
 * API writes go to the file at once and take effect after the next reload, as the spec says.
 */
export class FileUserStore implements UserStore {
  readonly kind = 'file';
  readonly writesVisibleAtOnce = false;
  private snapshot = new Map<string, UserRecord>();
  /** Serialises read-modify-write cycles on the file. */
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(private readonly path: string) {}

  static async open(path: string): Promise<FileUserStore> {
    const store = new FileUserStore(path);
    await store.reload();
    return store;
  }

  async reload(): Promise<void> {
    const users = await readUserFile(this.path);
    this.snapshot = new Map(users.map((u) => [u.username, toRecord(u)]));
  }

  find(username: string): Promise<UserRecord | undefined> {
    return Promise.resolve(this.snapshot.get(username));
  }

  list(): Promise<UserRecord[]> {
    return Promise.resolve([...this.snapshot.values()].sort((a, b) => a.username.localeCompare(b.username)));
  }

  async listForWrite(): Promise<UserRecord[]> {
    return (await this.readForWrite()).map(toRecord);
  }

  create(user: NewUser): Promise<void> {
    return this.modify((users) => {
      const taken = findLookAlike(
        users.map((u) => u.username),
        user.username,
      );
      if (taken !== undefined) throw userExistsError(user.username, taken);
      return [...users, { username: user.username, password: user.passwordHash, groups: user.groups }];
    });
  }

  update(username: string, changes: UserChanges): Promise<void> {
    return this.modify((users) => {
      const target = users.find((u) => u.username === username);
      if (!target) throw new AppError('not_found', ERROR_CODES.userNotFound, `User '${username}' not found`);
      if (changes.passwordHash !== undefined) target.password = changes.passwordHash;
      if (changes.groups !== undefined) target.groups = [...changes.groups];
      if (changes.twoFaSendTo === '') delete target.two_fa_send_to;
      else if (changes.twoFaSendTo !== undefined) target.two_fa_send_to = changes.twoFaSendTo;
      return users;
    });
  }

  delete(username: string): Promise<void> {
    return this.modify((users) => {
      if (!users.some((u) => u.username === username)) {
        throw new AppError('not_found', ERROR_CODES.userNotFound, `User '${username}' not found`);
      }
      return users.filter((u) => u.username !== username);
    });
  }

  private async readForWrite(): Promise<FileUser[]> {
    try {
      return await readUserFile(this.path);
    } catch (err) {
      // The file was broken by hand since start: refuse the write rather than overwrite what is there.
      throw new AppError(
        'conflict',
        ERROR_CODES.invalidRequest,
        'The user file cannot be changed now',
        (err as Error).message,
      );
    }
  }

  private modify(change: (users: FileUser[]) => FileUser[]): Promise<void> {
    const run = this.queue.then(async () => {
      const next = change(await this.readForWrite());
      await writeJsonFileAtomic(this.path, next);
    });
    this.queue = run.catch(() => undefined);
    return run;
  }
}
