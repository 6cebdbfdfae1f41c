import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { consoleRoute } from './console-route.js';

const usersRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/users',
  component: lazyRouteComponent(() => import('../pages/users-page.js'), 'UsersPage'),
});

export const usersRoutes = [usersRoute] as const;
