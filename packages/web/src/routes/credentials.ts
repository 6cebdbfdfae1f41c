import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { consoleRoute } from './console-route.js';

const credentialsRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/credentials',
  component: lazyRouteComponent(() => import('../pages/credentials-page.js'), 'CredentialsPage'),
});

export const credentialsRoutes = [credentialsRoute] as const;
