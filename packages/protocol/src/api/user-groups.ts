import { z } from 'zod';
import { clientGroupScopeSchema } from './group-policy.js';

/**
 * The named permissions a user group grants (issue 28): OpenRPort's names where they apply, then svcd's own for
 * routes OpenRPort has none for. Each route declares the one it needs next to its OpenAPI operation.
 */
export const PERMISSIONS = [
  'commands',
  'scripts',
  'tunnels',
  'vault',
  'scheduler',
  'auditlog',
  'library',
  'client-groups',
  'clients',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** What each permission allows, for the README table and the console's editor. */
export const PERMISSION_DESCRIPTIONS: Record<Permission, string> = {
  commands: 'run commands on clients (one or many), list and cancel jobs and multi-client jobs',
  scripts: 'run scripts on clients (one or many), read the script library',
  tunnels: 'open, close and list tunnels',
  vault: 'read, add, change and delete vault entries; see whether the vault is unlocked',
  scheduler: 'create, change, delete and read schedules and their runs',
  auditlog: 'read and export the audit log',
  library: 'add, change and delete library scripts',
  'client-groups': 'create, change and delete client groups',
  clients: 'forget (delete) disconnected clients',
};

export const isPermission = (name: string): name is Permission =>
  (PERMISSIONS as readonly string[]).includes(name);

/** Every permission with whether it is granted. */
export const permissionMapSchema = z.object(
  Object.fromEntries(PERMISSIONS.map((p) => [p, z.boolean()])) as Record<Permission, z.ZodBoolean>,
);
export type PermissionMap = z.infer<typeof permissionMapSchema>;

/** `tunnels_restricted` / `commands_restricted`: a JSON object kept as given (their rules are issue 28 §3). */
export const restrictionsSchema = z.record(z.string(), z.unknown());

/** An element of GET /user-groups and the `data` of GET/PUT /user-groups/{name}. */
export const userGroupSchema = z.object({
  name: z.string(),
  permissions: permissionMapSchema,
  /** The client groups its members are limited to; null: no limit (see "Client scope" in the README). */
  client_groups: clientGroupScopeSchema,
  tunnels_restricted: restrictionsSchema,
  commands_restricted: restrictionsSchema,
});
export type UserGroup = z.infer<typeof userGroupSchema>;

/**
 * PUT /user-groups/{name}: `permissions` replaces the whole set (a name left out is not granted); an absent
 * field keeps what is stored. `name`, when sent, must be the path's.
 */
export const updateUserGroupBodySchema = z.strictObject({
  name: z.string().optional(),
  permissions: z
    .strictObject(
      Object.fromEntries(PERMISSIONS.map((p) => [p, z.boolean().optional()])) as Record<
        Permission,
        z.ZodOptional<z.ZodBoolean>
      >,
    )
    .optional(),
  client_groups: clientGroupScopeSchema.optional(),
  tunnels_restricted: restrictionsSchema.optional(),
  commands_restricted: restrictionsSchema.optional(),
});
export type UpdateUserGroupBody = z.infer<typeof updateUserGroupBodySchema>;
