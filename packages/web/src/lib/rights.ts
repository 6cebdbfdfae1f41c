/** What the console shows to whom. The API decides; this only hides what would answer 403 anyway. */
import type { Permission } from '@svc/protocol';

export const ADMINISTRATORS = 'Administrators';

export const isAdministrator = (groups: readonly string[] | undefined): boolean =>
  groups?.includes(ADMINISTRATORS) ?? false;

/** What the console knows of the caller: GET /me's groups and effective permissions. */
export interface Rights {
  groups?: readonly string[];
  effective_user_permissions?: Partial<Record<Permission, boolean>>;
}

/** Whether the caller has a named permission (Administrators: all); false until /me answers. */
export const allows = (me: Rights | undefined, permission: Permission): boolean =>
  isAdministrator(me?.groups) || me?.effective_user_permissions?.[permission] === true;

/**
 * The menu lines a user sees: admin-only pages only for members of Administrators, pages of a permission only
 * for those who have it (none of either until /me answers).
 */
export function visiblePages<P extends { to: string; admin?: boolean; permission?: Permission }>(
  pages: readonly P[],
  me: Rights | undefined,
): P[] {
  const admin = isAdministrator(me?.groups);
  return pages.filter(
    (page) => (!page.admin || admin) && (page.permission === undefined || allows(me, page.permission)),
  );
}

/** Group names typed in a multiselect: trimmed, without blanks or duplicates, in the order given. */
export function cleanGroups(groups: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const raw of groups) {
    const name = raw.trim();
    if (name && !seen.has(name)) {
      seen.add(name);
      out.push(name);
    }
  }
  return out;
}
