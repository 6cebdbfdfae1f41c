import { z } from 'zod';
import { permissionMapSchema } from './user-groups.js';
import { passwordSchema } from './users.js';

/** Scopes of a personal API token: GET requests only, everything, or only the client credentials API. */
export const API_TOKEN_SCOPES = ['read', 'read+write', 'clients-auth'] as const;
export const apiTokenScopeSchema = z.enum(API_TOKEN_SCOPES, {
  error: `must be one of ${API_TOKEN_SCOPES.map((s) => `"${s}"`).join(', ')}`,
});
export type ApiTokenScope = z.infer<typeof apiTokenScopeSchema>;

/** The public part of a token: 8 letters and digits, used to find it and to name it in URLs. */
export const API_TOKEN_PREFIX_LENGTH = 8;
export const API_TOKEN_NAME_MAX = 250;

const tokenNameSchema = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(API_TOKEN_NAME_MAX, `must be at most ${API_TOKEN_NAME_MAX} characters`);

const expiresAtSchema = z.iso.datetime({
  offset: true,
  error: 'must be an RFC 3339 date and time, e.g. 2030-01-31T12:00:00Z',
});

export const createApiTokenBodySchema = z.strictObject({
  name: tokenNameSchema,
  scope: apiTokenScopeSchema,
  /** Default: one year after creation. */
  expires_at: expiresAtSchema.optional(),
});
export type CreateApiTokenBody = z.infer<typeof createApiTokenBodySchema>;

export const updateApiTokenBodySchema = z.strictObject({
  name: tokenNameSchema.optional(),
  expires_at: expiresAtSchema.optional(),
});
export type UpdateApiTokenBody = z.infer<typeof updateApiTokenBodySchema>;

/** An element of GET /me/tokens; the secret is never shown again after creation. */
export const apiTokenItemSchema = z.object({
  prefix: z.string(),
  name: z.string(),
  scope: apiTokenScopeSchema,
  created_at: z.string(),
  expires_at: z.string(),
  /** When it was last used to log in (stored at most once a minute); null when never. */
  last_used_at: z.string().nullable(),
});
export type ApiTokenItem = z.infer<typeof apiTokenItemSchema>;

/** The answer to POST /me/tokens: `token` (`<prefix>_<secret>`) is the HTTP Basic password, shown only here. */
export const createdApiTokenSchema = apiTokenItemSchema.extend({ token: z.string() });
export type CreatedApiToken = z.infer<typeof createdApiTokenSchema>;

/** `data` of GET /me. */
export const meDataSchema = z.object({
  username: z.string(),
  groups: z.array(z.string()),
  /** Empty when none is set. */
  two_fa_send_to: z.string(),
  password_expired: z.boolean(),
  /** Whether logins of this server ask for a second factor (code delivery or authenticator app). */
  two_fa_enabled: z.boolean(),
  /** Whether the second factor is an authenticator app (TOTP). */
  totp_enabled: z.boolean(),
  /** The union of the permissions of the caller's groups (all for Administrators), as OpenRPort names it. */
  effective_user_permissions: permissionMapSchema,
  /** False without [api] group_details_table: then every user but Administrators has all but `auditlog`. */
  group_permissions_enabled: z.boolean(),
});
export type MeData = z.infer<typeof meDataSchema>;

export const updateMeBodySchema = z.strictObject({
  password: passwordSchema.optional(),
  /** Required with `password`. */
  old_password: z.string().optional(),
  two_fa_send_to: z.string().max(150, 'must be at most 150 characters').optional(),
});
export type UpdateMeBody = z.infer<typeof updateMeBodySchema>;

/** `data` of GET /me/ip. */
export const meIpDataSchema = z.object({ ip: z.string() });
export type MeIpData = z.infer<typeof meIpDataSchema>;
