/**
 * The vault in the API (spec 2.7, 2.8, 4.9, 4.10): request bodies, the entry as GET /vault/{id} returns it, the
 * list item and the vault status. Field names follow the spec and OpenRPort.
 */
import { z } from 'zod';

export const VAULT_PASSWORD_MIN_BYTES = 4;
export const VAULT_PASSWORD_MAX_BYTES = 32;
export const VAULT_KEY_MAX_CHARS = 255;
export const VAULT_CLIENT_ID_MAX_CHARS = 100;
export const VAULT_GROUP_MAX_CHARS = 150;

const utf8Bytes = (text: string) => new TextEncoder().encode(text).length;

/** POST /vault-admin/init: the password is 4 to 32 bytes (UTF-8), as spec 8 says. */
export const vaultInitBodySchema = z.strictObject({
  password: z
    .string()
    .refine(
      (s) => utf8Bytes(s) >= VAULT_PASSWORD_MIN_BYTES,
      `is too short: at least ${VAULT_PASSWORD_MIN_BYTES} bytes`,
    )
    .refine(
      (s) => utf8Bytes(s) <= VAULT_PASSWORD_MAX_BYTES,
      `is too long: at most ${VAULT_PASSWORD_MAX_BYTES} bytes`,
    ),
});
export type VaultInitBody = z.output<typeof vaultInitBodySchema>;

/** POST /vault-admin/sesame. Any string: a wrong one is answered 401 like any other wrong password. */
export const vaultUnlockBodySchema = z.strictObject({ password: z.string() });
export type VaultUnlockBody = z.output<typeof vaultUnlockBodySchema>;

export const VAULT_ENTRY_TYPES = ['text', 'secret', 'markdown', 'string'] as const;
export const vaultEntryTypeSchema = z.enum(VAULT_ENTRY_TYPES);
export type VaultEntryType = z.infer<typeof vaultEntryTypeSchema>;

/** POST /vault and PUT /vault/{id} (a full replacement): key, value and type are required. */
export const vaultEntryBodySchema = z.strictObject({
  /** Ties the entry to a client; a missing one is stored as '' (any client). */
  client_id: z.string().max(VAULT_CLIENT_ID_MAX_CHARS).default(''),
  /** When non-empty only members of this group may read, change or delete the entry. */
  required_group: z.string().max(VAULT_GROUP_MAX_CHARS).default(''),
  key: z
    .string()
    .refine((s) => s.trim() !== '', 'must not be empty')
    .refine((s) => s.length <= VAULT_KEY_MAX_CHARS, `must be at most ${VAULT_KEY_MAX_CHARS} characters`),
  value: z.string().refine((s) => s !== '', 'must not be empty'),
  type: vaultEntryTypeSchema,
});
export type VaultEntryBody = z.output<typeof vaultEntryBodySchema>;

/** GET /vault/{id}: the whole entry with its decrypted value. */
export const vaultEntrySchema = z.object({
  id: z.number().int(),
  client_id: z.string(),
  required_group: z.string(),
  key: z.string(),
  value: z.string(),
  type: vaultEntryTypeSchema,
  created_at: z.string(),
  updated_at: z.string(),
  created_by: z.string(),
  updated_by: z.string(),
});
export type VaultEntry = z.infer<typeof vaultEntrySchema>;

/** An element of GET /vault: never the value. */
export const vaultListItemSchema = vaultEntrySchema.pick({
  id: true,
  client_id: true,
  created_by: true,
  created_at: true,
  key: true,
});
export type VaultListItem = z.infer<typeof vaultListItemSchema>;
export const VAULT_LIST_FIELDS = Object.keys(vaultListItemSchema.shape) as (keyof VaultListItem)[];

export const vaultEntryIdSchema = z.object({ id: z.number().int() });
export type VaultEntryId = z.infer<typeof vaultEntryIdSchema>;

/** `data` of GET /vault-admin (spec 2.8). */
export const vaultStatusSchema = z.object({
  init: z.enum(['setup-completed', 'uninitialized']),
  status: z.enum(['locked', 'unlocked']),
});
export type VaultStatus = z.infer<typeof vaultStatusSchema>;
