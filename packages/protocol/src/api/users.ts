import { z } from 'zod';
import { groupNameSchema, usernameSchema } from './names.js';

/** bcrypt reads at most this many bytes of a password. */
export const PASSWORD_MAX_BYTES = 72;

export const passwordByteLength = (s: string): number => new TextEncoder().encode(s).length;

/** bcrypt ignores what follows the first 72 bytes, so a longer password would only seem stronger. */
export const passwordSchema = z
  .string()
  .min(8, 'must be at least 8 characters')
  .refine(
    (s) => passwordByteLength(s) <= PASSWORD_MAX_BYTES,
    `must be at most ${PASSWORD_MAX_BYTES} bytes (bcrypt ignores the rest)`,
  );

export const groupsSchema = z.array(groupNameSchema).max(100, 'at most 100 groups');

/** Where a user's 2FA codes go (spec 2.2); the configured delivery decides what is valid (checked by svcd). */
export const twoFaSendToSchema = z.string().max(150, 'must be at most 150 characters');

export const createUserBodySchema = z.strictObject({
  username: usernameSchema,
  password: passwordSchema,
  groups: groupsSchema.optional(),
  two_fa_send_to: twoFaSendToSchema.optional(),
});
export type CreateUserBody = z.infer<typeof createUserBodySchema>;

export const updateUserBodySchema = z.strictObject({
  password: passwordSchema.optional(),
  groups: groupsSchema.optional(),
  two_fa_send_to: twoFaSendToSchema.optional(),
});
export type UpdateUserBody = z.infer<typeof updateUserBodySchema>;

/** An element of GET /users; never the password. */
export const userListItemSchema = z.object({ username: z.string(), groups: z.array(z.string()) });
export type UserListItem = z.infer<typeof userListItemSchema>;

/**
 * A user's second factor as GET /users lists it (never a secret): `method` is svcd's second factor
 * (`totp_authenticator_app`, or the code delivery: `smtp`, `pushover`, `executable`), null when none is
 * configured; `enabled` says the user's logins use it: an authenticator app enrolled, or a `two_fa_send_to`.
 */
export const userTwoFaSchema = z.object({ enabled: z.boolean(), method: z.string().nullable() });
export type UserTwoFa = z.infer<typeof userTwoFaSchema>;

export const userListEntrySchema = userListItemSchema.extend({ two_fa: userTwoFaSchema });
