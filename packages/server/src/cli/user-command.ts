import { access, writeFile } from 'node:fs/promises';
import type { PasswordHasher } from '../core/auth/ports.js';
import { ADMIN_GROUP, type UserRecord } from '../core/users/user-store.js';
import { UsersService } from '../core/users/users-service.js';
import { createUserBodySchema, updateUserBodySchema } from '@svc/protocol';
import type { SvcdConfig } from '../config/schema.js';
import { parseBody } from '../http/body.js';
import { createBcryptHasher } from '../infra/bcrypt-hasher.js';
import { openDatabase, type Database } from '../storage/database.js';
import { openUserStore } from '../storage/open-user-store.js';
import { deleteUserLeftovers } from '../storage/user-leftovers.js';

export type UserAction = 'add' | 'change' | 'delete';

export interface UserCommandInput {
  action: UserAction;
  username: string;
  groups: string[];
  /** Present when -p was given. */
  password?: string;
}

/** The CLI acts as the machine's operator: it passes the Administrators check; the last-admin rule still holds. */
const LOCAL_OPERATOR: UserRecord = {
  username: '(svcd user)',
  passwordHash: '',
  groups: [ADMIN_GROUP],
  twoFaSendTo: null,
  totpSecret: null,
  passwordExpired: false,
};

/** `svcd user add|change|delete`: writes straight to the configured user store, not through the API. */
export async function runUserCommand(
  config: SvcdConfig,
  input: UserCommandInput,
  hasher: PasswordHasher = createBcryptHasher(),
): Promise<string> {
  if (config.api.auth) {
    throw new Error('[api] auth: svcd runs with a single static user; there is no user store to change');
  }
  if (config.api.auth_file) await createFileIfMissing(config.api.auth_file);
  let database: Database | undefined;
  const getDatabase = async () =>
    (database ??= await openDatabase(config.database, { dataDir: config.server.data_dir }));
  try {
    const store = await openUserStore(config.api, getDatabase, hasher);
    const service = new UsersService(store, hasher, undefined, async (username) =>
      deleteUserLeftovers(await getDatabase(), username),
    );
    const groups = input.groups.length > 0 ? input.groups : undefined;
    switch (input.action) {
      case 'add': {
        if (input.password === undefined) throw new Error('a new user needs a password: add -p');
        const body = parseBody(createUserBodySchema, {
          username: input.username,
          password: input.password,
          groups,
        });
        await service.create(LOCAL_OPERATOR, body);
        break;
      }
      case 'change': {
        const body = parseBody(updateUserBodySchema, { password: input.password, groups });
        await service.update(LOCAL_OPERATOR, input.username, body);
        break;
      }
      case 'delete':
        await service.delete(LOCAL_OPERATOR, input.username);
        break;
    }
    const where = config.api.auth_file
      ? `file ${config.api.auth_file}`
      : `table ${config.api.auth_user_table}`;
    const reload = config.api.auth_file ? '; a running svcd picks it up on SIGUSR1 or restart' : '';
    return `user '${input.username}' ${pastTense[input.action]} in ${where}${reload}`;
  } finally {
    await database?.close();
  }
}

const pastTense: Record<UserAction, string> = { add: 'added', change: 'changed', delete: 'deleted' };

async function createFileIfMissing(path: string): Promise<void> {
  try {
    await access(path);
  } catch {
    await writeFile(path, '[]\n', { mode: 0o600, flag: 'wx' }).catch(() => undefined);
  }
}
