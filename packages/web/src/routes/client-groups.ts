import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { consoleRoute } from './console-route.js';

const groupsRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/client-groups',
  component: lazyRouteComponent(() => import('../pages/client-groups-page.js'), 'ClientGroupsPage'),
});

const newGroupRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/client-groups/new',
  component: lazyRouteComponent(() => import('../pages/client-group-page.js'), 'NewClientGroupPage'),
});

const groupRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/client-groups/$groupId',
  component: lazyRouteComponent(() => import('../pages/client-group-page.js'), 'ClientGroupPage'),
});

export const clientGroupRoutes = [groupsRoute, newGroupRoute, groupRoute] as const;
