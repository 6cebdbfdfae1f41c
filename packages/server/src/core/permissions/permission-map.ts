import { isPermission, PERMISSIONS, type Permission, type PermissionMap } from '@svc/protocol';

const mapOf = (granted: (p: Permission) => boolean): PermissionMap =>
  Object.fromEntries(PERMISSIONS.map((p) => [p, granted(p)])) as PermissionMap;

export const ALL_PERMISSIONS: PermissionMap = mapOf(() => true);
export const NO_PERMISSIONS: PermissionMap = mapOf(() => false);

/**
 * Without group permissions (no group_details table) a user outside Administrators has what every user had
 * before permissions existed: everything but the audit log, which was for Administrators only.
 */
export const WITHOUT_GROUP_PERMISSIONS: PermissionMap = mapOf((p) => p !== 'auditlog');

/** Each permission granted by at least one of the maps. */
export const unionOf = (maps: readonly PermissionMap[]): PermissionMap =>
  mapOf((p) => maps.some((m) => m[p]));

/**
 * The `permissions` JSON text of a group_details row: `true` grants, anything else does not; names svcd does
 * not know (OpenRPort's `monitoring`, `uploads`) are ignored; text that is not a JSON object grants nothing.
 */
export function parsePermissions(text: string | null | undefined): PermissionMap {
  const object = parseObject(text);
  return mapOf((p) => object[p] === true);
}

/** A JSON object column (`tunnels_restricted`, `commands_restricted`); anything else reads as `{}`. */
export function parseObject(text: string | null | undefined): Record<string, unknown> {
  if (!text) return {};
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/** The text stored for a permission map: the granted names only, OpenRPort's `{"commands":true}` form. */
export const permissionsText = (map: PermissionMap): string =>
  JSON.stringify(Object.fromEntries(Object.entries(map).filter(([name, on]) => on && isPermission(name))));
