import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { consoleRoute } from './console-route.js';

const tunnelsRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/tunnels',
  component: lazyRouteComponent(() => import('../pages/tunnels-page.js'), 'TunnelsPage'),
});

export const tunnelRoutes = [tunnelsRoute] as const;
