import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { consoleRoute } from './console-route.js';

const accountRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/account',
  component: lazyRouteComponent(() => import('../pages/account-page.js'), 'AccountPage'),
});

export const accountRoutes = [accountRoute] as const;
