import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { consoleRoute } from './console-route.js';

const dashboardRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/',
  component: lazyRouteComponent(() => import('../pages/dashboard-page.js'), 'DashboardPage'),
});

export const dashboardRoutes = [dashboardRoute] as const;
