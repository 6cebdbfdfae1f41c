import type { ListQuery, VaultEntryType, VaultListItem } from '@svc/protocol';
import type { VaultKeyRecord } from './vault-crypto.js';

/** An entry as stored: `value` is the sealed form (vault-crypto.ts), times are epoch milliseconds. */
export interface StoredVaultEntry {
  id: number;
  client_id: string;
  required_group: string;
  key: string;
  value: string;
  type: VaultEntryType;
  created_at: number;
  updated_at: number;
  created_by: string;
  updated_by: string;
}

export type NewVaultEntry = Omit<StoredVaultEntry, 'id'>;
/** A full replacement keeps who created it and when. */
export type VaultEntryChange = Omit<StoredVaultEntry, 'id' | 'created_at' | 'created_by'>;

/** Persistence of the vault; every engine stores the same thing. */
export interface VaultRepository {
  /** The key record written at init, or undefined while the vault is uninitialized. */
  readKey(): Promise<VaultKeyRecord | undefined>;
  /** Stores the key record; false when one exists already (another init got there first). */
  saveKey(record: VaultKeyRecord, createdBy: string, createdAt: number): Promise<boolean>;
  /** The new id, or 'duplicate' when (client_id, key) is taken. */
  insert(entry: NewVaultEntry): Promise<number | 'duplicate'>;
  get(id: number): Promise<StoredVaultEntry | undefined>;
  update(id: number, change: VaultEntryChange): Promise<'updated' | 'missing' | 'duplicate'>;
  /** False when there was no such entry. */
  delete(id: number): Promise<boolean>;
  /** List items (never values), filtered, sorted and paged; count before paging. */
  list(query: ListQuery): Promise<{ data: VaultListItem[]; count: number }>;
}
