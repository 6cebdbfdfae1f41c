import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { parseClientSearch } from '../lib/client-filters.js';
import { consoleRoute } from './console-route.js';

const clientsRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/clients',
  validateSearch: parseClientSearch,
  component: lazyRouteComponent(() => import('../pages/clients-page.js'), 'ClientsPage'),
});

const clientRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/clients/$clientId',
  component: lazyRouteComponent(() => import('../pages/client-page.js'), 'ClientPage'),
});

export const clientRoutes = [clientsRoute, clientRoute] as const;
