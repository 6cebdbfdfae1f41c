import type { Permission } from '@svc/protocol';
import { useQuery } from '@tanstack/react-query';
import { meQuery } from '../api/admin.js';
import { allows } from '../lib/rights.js';

/** Whether the logged-in user has the permission (GET /me); hides actions svcd would refuse with 403. */
export function useAllows(permission: Permission): boolean {
  const me = useQuery(meQuery);
  return allows(me.data, permission);
}

/** Whether the logged-in user has at least one of the permissions (e.g. commands or scripts to start a run). */
export function useAllowsAny(...permissions: Permission[]): boolean {
  const me = useQuery(meQuery);
  return permissions.some((permission) => allows(me.data, permission));
}
