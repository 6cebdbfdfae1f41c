import type { QueryClient } from '@tanstack/react-query';
import { createRootRouteWithContext, createRoute, Outlet, redirect } from '@tanstack/react-router';
import { ConsoleLayout } from '../components/console-layout.js';
import { NotFoundPage } from '../components/not-found.js';
import { session } from '../session/session.js';

export interface RouterContext {
  queryClient: QueryClient;
}

export const rootRoute = createRootRouteWithContext<RouterContext>()({
  component: Outlet,
  notFoundComponent: NotFoundPage,
});

/**
 * The parent of every page but login: only with a session; without one, login first and come back here. Each
 * area of the console declares its pages under it in its own file (`routes/<area>.ts`), and `router.tsx` lists them.
 */
export const consoleRoute = createRoute({
  getParentRoute: () => rootRoute,
  id: 'console',
  beforeLoad: ({ location }) => {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the router's way to redirect from beforeLoad
    if (!session.get()) throw redirect({ to: '/login', search: { redirect: location.href } });
  },
  component: ConsoleLayout,
});
