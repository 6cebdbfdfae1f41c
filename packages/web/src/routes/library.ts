import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { parseLibrarySearch } from '../api/library-queries.js';
import { consoleRoute } from './console-route.js';

const libraryRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/library',
  validateSearch: parseLibrarySearch,
  component: lazyRouteComponent(() => import('../pages/library-page.js'), 'LibraryPage'),
});

const newScriptRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/library/new',
  component: lazyRouteComponent(() => import('../pages/library-script-page.js'), 'NewLibraryScriptPage'),
});

const scriptRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/library/$scriptId',
  component: lazyRouteComponent(() => import('../pages/library-script-page.js'), 'LibraryScriptPage'),
});

export const libraryRoutes = [libraryRoute, newScriptRoute, scriptRoute] as const;
