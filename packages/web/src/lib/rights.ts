/** What the console shows to whom. The API decides; this only hides what would answer 403 anyway. */

export const ADMINISTRATORS = 'Administrators';

export const isAdministrator = (groups: readonly string[] | undefined): boolean =>
  groups?.includes(ADMINISTRATORS) ?? false;

/** The menu lines a user sees: admin-only pages only for members of Administrators (none until /me answers). */
export function visiblePages<P extends { to: string; admin?: boolean }>(
  pages: readonly P[],
  groups: readonly string[] | undefined,
): P[] {
  const admin = isAdministrator(groups);
  return pages.filter((page) => !page.admin || admin);
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
