import type { QueryClient } from '@tanstack/react-query';
import { createRoute, createRouter } from '@tanstack/react-router';
import { LoginPage } from './pages/login-page.js';
import { clientRoutes } from './routes/clients.js';
import { consoleRoute, rootRoute } from './routes/console-route.js';
import { clientGroupRoutes } from './routes/client-groups.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { accountRoutes } from './routes/account.js';
import { credentialsRoutes } from './routes/credentials.js';
import { tokensRoutes } from './routes/tokens.js';
import { usersRoutes } from './routes/users.js';
import { libraryRoutes } from './routes/library.js';
import { vaultRoutes } from './routes/vault.js';
import { tunnelRoutes } from './routes/tunnels.js';
import { runRoutes } from './routes/runs.js';
import { scheduleRoutes } from './routes/schedules.js';
import { auditRoutes } from './routes/audit.js';

export type { RouterContext } from './routes/console-route.js';

export interface LoginSearch {
  /** The page to return to after login (same origin paths only). */
  redirect?: string;
}

const loginRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/login',
  validateSearch: (raw: Record<string, unknown>): LoginSearch =>
    typeof raw.redirect === 'string' && raw.redirect.startsWith('/') && !raw.redirect.startsWith('//')
      ? { redirect: raw.redirect }
      : {},
  component: LoginPage,
});

// One line per area of the console (its pages live in routes/<area>.ts).
const routeTree = rootRoute.addChildren([
  loginRoute,
  consoleRoute.addChildren([
    ...dashboardRoutes,
    ...clientRoutes,
    ...runRoutes,
    ...auditRoutes,
    ...usersRoutes,
    ...tokensRoutes,
    ...credentialsRoutes,
    ...accountRoutes,
    ...libraryRoutes,
    ...vaultRoutes,
    ...clientGroupRoutes,
    ...tunnelRoutes,
    ...scheduleRoutes,
  ]),
]);

export function createConsoleRouter(queryClient: QueryClient) {
  return createRouter({ routeTree, context: { queryClient }, defaultPreload: 'intent' });
}

declare module '@tanstack/react-router' {
  interface Register {
    router: ReturnType<typeof createConsoleRouter>;
  }
}
