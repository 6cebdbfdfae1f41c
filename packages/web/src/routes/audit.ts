/**
 * The audit log page (Administrators): `/audit?username=&action=&client_id=&since=&until=&page=N`, every filter
 * in the URL so a filtered view can be shared.
 */
import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { AUDIT_FILTER_KEYS, type AuditFilters } from '../api/audit.js';
import { consoleRoute } from './console-route.js';

export type AuditSearch = AuditFilters & { page?: number };

const auditRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/audit',
  validateSearch: (raw: Record<string, unknown>): AuditSearch => {
    const search: AuditSearch = {};
    for (const key of AUDIT_FILTER_KEYS) {
      const value = raw[key];
      if (typeof value === 'string' && value.trim() !== '') search[key] = value.trim();
    }
    const page = Number(raw.page);
    if (Number.isInteger(page) && page > 1) search.page = page;
    return search;
  },
  component: lazyRouteComponent(() => import('../pages/audit-page.js'), 'AuditPage'),
});

export const auditRoutes = [auditRoute] as const;
