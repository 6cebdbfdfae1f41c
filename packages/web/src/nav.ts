import type { Permission } from '@svc/protocol';

/**
 * The console's navigation, in order. One line per page an operator reaches from the menu; each area adds its
 * own line here (its routes live in routes/<area>.ts). `admin: true` shows the line to members of Administrators
 * only (svcd answers 403 to others anyway; the page says so when reached by its URL); `permission` shows it to
 * those whose groups grant that permission (GET /me's effective_user_permissions).
 */
export const NAV_PAGES: readonly { to: string; label: string; admin?: true; permission?: Permission }[] = [
  { to: '/', label: 'Dashboard' },
  { to: '/clients', label: 'Clients' },
  { to: '/runs', label: 'Runs', permission: 'commands' },
  { to: '/schedules', label: 'Schedules', permission: 'scheduler' },
  { to: '/library', label: 'Library', permission: 'scripts' },
  { to: '/vault', label: 'Vault', permission: 'vault' },
  { to: '/client-groups', label: 'Client groups' },
  { to: '/tunnels', label: 'Tunnels', permission: 'tunnels' },
  { to: '/users', label: 'Users', admin: true },
  { to: '/tokens', label: 'API tokens' },
  { to: '/credentials', label: 'Client credentials', admin: true },
  { to: '/audit', label: 'Audit log', permission: 'auditlog' },
  { to: '/account', label: 'My account' },
];
