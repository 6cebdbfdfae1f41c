/**
 * The console's navigation, in order. One line per page an operator reaches from the menu; each area adds its
 * own line here (its routes live in routes/<area>.ts). `admin: true` shows the line to members of Administrators
 * only (svcd answers 403 to others anyway; the page says so when reached by its URL).
 */
export const NAV_PAGES = [
  { to: '/', label: 'Dashboard' },
  { to: '/clients', label: 'Clients' },
  { to: '/runs', label: 'Runs' },
  { to: '/schedules', label: 'Schedules' },
  { to: '/library', label: 'Library' },
  { to: '/vault', label: 'Vault' },
  { to: '/client-groups', label: 'Client groups' },
  { to: '/tunnels', label: 'Tunnels' },
  { to: '/users', label: 'Users', admin: true },
  { to: '/tokens', label: 'API tokens' },
  { to: '/credentials', label: 'Client credentials', admin: true },
  { to: '/audit', label: 'Audit log', admin: true },
  { to: '/account', label: 'My account' },
] as const;
