/**
 * The console's navigation, in order. One line per page an operator reaches from the menu; each area adds its
 * own line here (its routes live in routes/<area>.ts).
 */
export const NAV_PAGES = [
  { to: '/', label: 'Dashboard' },
  { to: '/clients', label: 'Clients' },
  { to: '/runs', label: 'Runs' },
] as const;
