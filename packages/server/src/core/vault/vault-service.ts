import type {
  ListQuery,
  VaultEntry,
  VaultEntryBody,
  VaultEntryId,
  VaultListItem,
  VaultStatus,
} from '@svc/protocol';
import type { Clock } from '../auth/ports.js';
import { assertAdmin, type UserRecord } from '../users/user-store.js';
import type { StoredVaultEntry, VaultRepository } from './ports.js';
import {
  createVaultKey,
  decryptValue,
  encryptValue,
  openVaultKey,
  PRODUCTION_KDF,
  type KdfParams,
} from './vault-crypto.js';
import { vaultErrors } from './vault-errors.js';

export type VaultCaller = Pick<UserRecord, 'username' | 'groups'>;

export interface VaultOptions {
  /** scrypt cost for a new vault; tests pass cheaper ones. An existing vault uses the ones it was made with. */
  kdf?: KdfParams;
}

const iso = (ms: number): string => new Date(ms).toISOString();
const OPEN: Promise<void> = Promise.resolve();

/**
 * The vault's states (spec 3): uninitialized → init → unlocked ⇄ locked; a restart starts locked. The data key
 * is the only secret held, and only in this process's memory while unlocked (the password itself is never
 * kept). Unlock state is per process: with several svcd nodes each one is unlocked on its own.
 */
export class VaultService {
  #dataKey: Buffer | undefined;
  /** Once seen initialized it stays so (there is no way back); until then the repository is asked. */
  #initialized = false;
  readonly #kdf: KdfParams;
  /** Key derivations run one at a time: each takes ~64 MiB and a thread-pool thread for ~170 ms. */
  #derivations: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly repository: VaultRepository,
    private readonly clock: Clock,
    options: VaultOptions = {},
  ) {
    this.#kdf = options.kdf ?? PRODUCTION_KDF;
  }

  async status(): Promise<VaultStatus> {
    const initialized = await this.#isInitialized();
    return {
      init: initialized ? 'setup-completed' : 'uninitialized',
      status: this.#dataKey ? 'unlocked' : 'locked',
    };
  }

  /** Throws unless `caller` may set up, unlock and lock the vault; routes call it before reading a body. */
  assertMayAdminister(caller: VaultCaller): void {
    assertAdmin(caller, 'the vault');
  }

  async init(caller: VaultCaller, password: string): Promise<void> {
    assertAdmin(caller, 'the vault');
    return this.#oneAtATime(() => this.#init(caller, password));
  }

  async unlock(caller: VaultCaller, password: string): Promise<void> {
    assertAdmin(caller, 'the vault');
    return this.#oneAtATime(() => this.#unlock(password));
  }

  async #init(caller: VaultCaller, password: string): Promise<void> {
    if (await this.#isInitialized()) throw vaultErrors.alreadyInitialized();
    const { record, dataKey } = await createVaultKey(password, this.#kdf);
    if (!(await this.repository.saveKey(record, caller.username, this.clock.now().getTime()))) {
      dataKey.fill(0);
      this.#initialized = true;
      throw vaultErrors.alreadyInitialized();
    }
    this.#initialized = true;
    this.#setKey(dataKey);
  }

  async #unlock(password: string): Promise<void> {
    const record = await this.repository.readKey();
    if (!record) throw vaultErrors.notInitialized();
    this.#initialized = true;
    if (this.#dataKey) throw vaultErrors.alreadyUnlocked();
    const dataKey = await openVaultKey(password, record);
    if (!dataKey) throw vaultErrors.wrongPassword();
    this.#setKey(dataKey);
  }

  async lock(caller: VaultCaller): Promise<void> {
    assertAdmin(caller, 'the vault');
    if (!(await this.#isInitialized())) throw vaultErrors.notInitialized();
    if (!this.#dataKey) throw vaultErrors.alreadyLocked();
    this.#setKey(undefined);
  }

  async list(query: ListQuery): Promise<{ data: VaultListItem[]; count: number }> {
    await this.assertOpen();
    return this.repository.list(query);
  }

  async get(caller: VaultCaller, id: number): Promise<VaultEntry> {
    await this.assertOpen();
    const entry = this.#permitted(caller, id, await this.repository.get(id));
    const value = decryptValue(this.#currentKey(), entry.value, entry.client_id, entry.key);
    if (value === undefined) throw vaultErrors.undecryptable(id);
    return {
      id: entry.id,
      client_id: entry.client_id,
      required_group: entry.required_group,
      key: entry.key,
      value,
      type: entry.type,
      created_at: iso(entry.created_at),
      updated_at: iso(entry.updated_at),
      created_by: entry.created_by,
      updated_by: entry.updated_by,
    };
  }

  /**
   * The value of the entry with exactly this key that a run on `clientId` may use: the client's own entry, else the
   * shared one (empty client_id); a run on many clients (no clientId) uses shared entries only. Same rules as
   * GET: 409 locked, 403 required_group; 404 ERR_VAULT_ENTRY_NOT_FOUND when there is none.
   */
  async valueByKey(caller: VaultCaller, key: string, clientId?: string): Promise<string> {
    await this.assertOpen();
    const query = {
      sort: [{ field: 'id', direction: 'asc' as const }],
      filters: [{ fields: ['key'], values: [key] }],
    };
    const { data } = await this.repository.list(query);
    const exact = data.filter((item) => item.key === key);
    const entry =
      (clientId === undefined ? undefined : exact.find((item) => item.client_id === clientId)) ??
      exact.find((item) => item.client_id === '');
    if (!entry) throw vaultErrors.keyNotFound(key, clientId);
    return (await this.get(caller, entry.id)).value;
  }

  async create(caller: VaultCaller, body: VaultEntryBody): Promise<VaultEntryId> {
    await this.assertOpen();
    const value = encryptValue(this.#currentKey(), body.value, body.client_id, body.key);
    const now = this.clock.now().getTime();
    const id = await this.repository.insert({
      client_id: body.client_id,
      required_group: body.required_group,
      key: body.key,
      value,
      type: body.type,
      created_at: now,
      updated_at: now,
      created_by: caller.username,
      updated_by: caller.username,
    });
    if (id === 'duplicate') throw vaultErrors.entryExists(body.client_id, body.key);
    return { id };
  }

  async update(caller: VaultCaller, id: number, body: VaultEntryBody): Promise<VaultEntryId> {
    await this.assertOpen();
    await this.#readable(caller, id);
    const outcome = await this.repository.update(id, {
      client_id: body.client_id,
      required_group: body.required_group,
      key: body.key,
      value: encryptValue(this.#currentKey(), body.value, body.client_id, body.key),
      type: body.type,
      updated_at: this.clock.now().getTime(),
      updated_by: caller.username,
    });
    if (outcome === 'missing') throw vaultErrors.entryNotFound(id);
    if (outcome === 'duplicate') throw vaultErrors.entryExists(body.client_id, body.key);
    return { id };
  }

  async delete(caller: VaultCaller, id: number): Promise<void> {
    await this.assertOpen();
    await this.#readable(caller, id);
    if (!(await this.repository.delete(id))) throw vaultErrors.entryNotFound(id);
  }

  /** The entry when it exists and the caller may use it (spec 4.10: required_group). */
  async #readable(caller: VaultCaller, id: number): Promise<StoredVaultEntry> {
    return this.#permitted(caller, id, await this.repository.get(id));
  }

  #permitted(caller: VaultCaller, id: number, entry: StoredVaultEntry | undefined): StoredVaultEntry {
    if (!entry) throw vaultErrors.entryNotFound(id);
    if (entry.required_group !== '' && !caller.groups.includes(entry.required_group)) {
      throw vaultErrors.groupRequired(entry.required_group);
    }
    return entry;
  }

  /**
   * Resolves while the vault is unlocked, else rejects with the 409 saying whether it is locked or not initialized.
   * Every vault request passes here, so the open case returns a settled promise without another async call.
   */
  assertOpen(): Promise<void> {
    return this.#dataKey ? OPEN : this.#notOpen();
  }

  async #notOpen(): Promise<never> {
    throw (await this.#isInitialized()) ? vaultErrors.locked() : vaultErrors.notInitialized();
  }

  /**
   * The data key for immediate, synchronous use: a lock wipes it, so it is never held across an await (an
   * operation that read from the database meanwhile asks again, and gets 409 if the vault was locked).
   */
  #currentKey(): Buffer {
    if (this.#dataKey) return this.#dataKey;
    throw this.#initialized ? vaultErrors.locked() : vaultErrors.notInitialized();
  }

  async #isInitialized(): Promise<boolean> {
    if (!this.#initialized) this.#initialized = (await this.repository.readKey()) !== undefined;
    return this.#initialized;
  }

  #oneAtATime<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#derivations.then(task);
    this.#derivations = run.catch(() => undefined);
    return run;
  }

  #setKey(key: Buffer | undefined): void {
    this.#dataKey?.fill(0);
    this.#dataKey = key;
  }
}
