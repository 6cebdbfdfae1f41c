import type { UserRecord } from '../users/user-store.js';

/**
 * Who may open and close tunnels. Today any authenticated user may; this is the one place to restrict it
 * (e.g. a `tunnels` permission or per-group rules).
 */
export function assertMayUseTunnels(_user: UserRecord): void {
  // Every authenticated user may use tunnels.
}
