import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { clientListQueryOptions } from '../api/queries.js';
import { parseClientSearch } from '../lib/client-filters.js';
import { consoleRoute } from './console-route.js';

const clientsRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/clients',
  validateSearch: parseClientSearch,
  // The list is asked for as soon as the route matches, while the page's chunk loads, not after it renders; the
  // loader does not wait for it (the page shows its own loading state and errors).
  loaderDeps: ({ search }) => search,
  loader: ({ context, deps }) => {
    void context.queryClient.prefetchQuery(clientListQueryOptions(deps));
  },
  component: lazyRouteComponent(() => import('../pages/clients-page.js'), 'ClientsPage'),
});

const clientRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/clients/$clientId',
  component: lazyRouteComponent(() => import('../pages/client-page.js'), 'ClientPage'),
});

export const clientRoutes = [clientsRoute, clientRoute] as const;
