import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { consoleRoute } from './console-route.js';

const tokensRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/tokens',
  component: lazyRouteComponent(() => import('../pages/tokens-page.js'), 'TokensPage'),
});

export const tokensRoutes = [tokensRoute] as const;
