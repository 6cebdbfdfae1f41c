import { AppError, ERROR_CODES } from '@svc/protocol';

/** The errors of the vault API, each with its kind (→ status) and stable code. */
export const vaultErrors = {
  notInitialized: () =>
    new AppError(
      'conflict',
      ERROR_CODES.vaultNotInitialized,
      'The vault is not initialized',
      'an Administrators member must first call POST /vault-admin/init with a password',
    ),
  alreadyInitialized: () =>
    new AppError(
      'conflict',
      ERROR_CODES.vaultAlreadyInitialized,
      'The vault is already initialized',
      'unlock it with POST /vault-admin/sesame and the password given at init',
    ),
  locked: () =>
    new AppError(
      'conflict',
      ERROR_CODES.vaultLocked,
      'The vault is locked',
      'an Administrators member must unlock it with POST /vault-admin/sesame',
    ),
  alreadyLocked: () => new AppError('conflict', ERROR_CODES.vaultLocked, 'The vault is already locked'),
  alreadyUnlocked: () =>
    new AppError('conflict', ERROR_CODES.vaultAlreadyUnlocked, 'The vault is already unlocked'),
  wrongPassword: () =>
    new AppError(
      'unauthenticated',
      ERROR_CODES.vaultWrongPassword,
      'Wrong vault password',
      'the vault stays locked; give the password used at init',
    ),
  invalidId: (raw: string) =>
    new AppError(
      'invalid',
      ERROR_CODES.invalidRequest,
      `id: must be a positive integer, got '${raw.slice(0, 40)}'`,
    ),
  entryNotFound: (id: number) =>
    new AppError('not_found', ERROR_CODES.vaultEntryNotFound, `Vault entry ${id} not found`),
  keyNotFound: (key: string, clientId: string | undefined) =>
    new AppError(
      'not_found',
      ERROR_CODES.vaultEntryNotFound,
      `No vault entry with key '${key}' for this run`,
      clientId === undefined
        ? 'a run on many clients uses shared entries (empty client_id)'
        : `a run on client '${clientId}' uses that client's entry, else a shared one (empty client_id)`,
    ),
  entryExists: (clientId: string, key: string) =>
    new AppError(
      'conflict',
      ERROR_CODES.vaultEntryExists,
      `Another entry with key '${key}' exists for client '${clientId}'`,
      'the pair (client_id, key) is unique; a missing client_id counts as the empty string',
    ),
  groupRequired: (group: string) =>
    new AppError(
      'forbidden',
      ERROR_CODES.vaultGroupRequired,
      `Only members of the group '${group}' may access this entry`,
    ),
  undecryptable: (id: number) =>
    new AppError(
      'internal',
      ERROR_CODES.internal,
      `Vault entry ${id} cannot be decrypted`,
      'its stored value was changed outside svcd',
    ),
};
