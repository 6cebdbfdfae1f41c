import type { QueryClient } from '@tanstack/react-query';
import {
  createRootRouteWithContext,
  createRoute,
  createRouter,
  lazyRouteComponent,
  Outlet,
  redirect,
} from '@tanstack/react-router';
import { parseClientSearch } from './lib/client-filters.js';
import { ConsoleLayout } from './components/console-layout.js';
import { NotFoundPage } from './components/not-found.js';
import { LoginPage } from './pages/login-page.js';
import { session } from './session/session.js';

export interface RouterContext {
  queryClient: QueryClient;
}

export interface LoginSearch {
  /** The page to return to after login (same origin paths only). */
  redirect?: string;
}

const rootRoute = createRootRouteWithContext<RouterContext>()({
  component: Outlet,
  notFoundComponent: NotFoundPage,
});

const loginRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/login',
  validateSearch: (raw: Record<string, unknown>): LoginSearch =>
    typeof raw.redirect === 'string' && raw.redirect.startsWith('/') && !raw.redirect.startsWith('//')
      ? { redirect: raw.redirect }
      : {},
  component: LoginPage,
});

/** Every page but login: only with a session; without one, login first and come back here. */
const consoleRoute = createRoute({
  getParentRoute: () => rootRoute,
  id: 'console',
  beforeLoad: ({ location }) => {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the router's way to redirect from beforeLoad
    if (!session.get()) throw redirect({ to: '/login', search: { redirect: location.href } });
  },
  component: ConsoleLayout,
});

const dashboardRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/',
  component: lazyRouteComponent(() => import('./pages/dashboard-page.js'), 'DashboardPage'),
});

const clientsRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/clients',
  validateSearch: parseClientSearch,
  component: lazyRouteComponent(() => import('./pages/clients-page.js'), 'ClientsPage'),
});

const clientRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/clients/$clientId',
  component: lazyRouteComponent(() => import('./pages/client-page.js'), 'ClientPage'),
});

const routeTree = rootRoute.addChildren([
  loginRoute,
  consoleRoute.addChildren([dashboardRoute, clientsRoute, clientRoute]),
]);

export function createConsoleRouter(queryClient: QueryClient) {
  return createRouter({ routeTree, context: { queryClient }, defaultPreload: 'intent' });
}

declare module '@tanstack/react-router' {
  interface Register {
    router: ReturnType<typeof createConsoleRouter>;
  }
}
