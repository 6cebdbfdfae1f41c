import { z } from 'zod';

const byteLength = (s: string): number => new TextEncoder().encode(s).length;

export const usernameSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(150, 'must be at most 150 characters')
  .refine((s) => s.trim() === s, 'must not start or end with blanks')
  .refine((s) => !s.includes(':'), 'must not contain a colon (HTTP Basic auth splits on it)')
  // eslint-disable-next-line no-control-regex
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not contain control characters');

/** bcrypt reads at most 72 bytes, so a longer password would only seem stronger. */
export const passwordSchema = z
  .string()
  .min(8, 'must be at least 8 characters')
  .refine((s) => byteLength(s) <= 72, 'must be at most 72 bytes (bcrypt ignores the rest)');

export const groupNameSchema = z.string().min(1, 'group names must not be empty').max(150);
export const groupsSchema = z.array(groupNameSchema).max(100, 'at most 100 groups');

export const createUserBodySchema = z.strictObject({
  username: usernameSchema,
  password: passwordSchema,
  groups: groupsSchema.optional(),
});
export type CreateUserBody = z.infer<typeof createUserBodySchema>;

export const updateUserBodySchema = z.strictObject({
  password: passwordSchema.optional(),
  groups: groupsSchema.optional(),
});
export type UpdateUserBody = z.infer<typeof updateUserBodySchema>;

export interface UserListItem {
  username: string;
  groups: string[];
}
