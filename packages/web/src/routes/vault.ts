import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { consoleRoute } from './console-route.js';

const vaultRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/vault',
  component: lazyRouteComponent(() => import('../pages/vault-page.js'), 'VaultPage'),
});

const newEntryRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/vault/new',
  component: lazyRouteComponent(() => import('../pages/vault-entry-page.js'), 'NewVaultEntryPage'),
});

const entryRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/vault/$entryId',
  component: lazyRouteComponent(() => import('../pages/vault-entry-page.js'), 'VaultEntryPage'),
});

export const vaultRoutes = [vaultRoute, newEntryRoute, entryRoute] as const;
