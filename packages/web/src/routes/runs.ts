/**
 * The Runs area: commands and scripts on many clients.
 *
 * - `/runs` — the multi-client runs, newest first (`?page=N`).
 * - `/runs/new` — compose a run. Other pages link here pre-filled with these search params (all optional; lists
 *   comma-separated):
 *     `client_ids=web-1,web-2`   target these clients (with `group_ids=g1,g2`: their union)
 *     `group_ids=g1`             target the members of these client groups
 *     `tags=web,db`              target by tags (`operator=AND|OR`, default OR)
 *     `labels=env:prod`          target by labels key:value (`operator=AND|OR`, default OR)
 *     `command=uptime`           the command to run
 *     `script_id=<id>`           run this library script (the form switches to "library script")
 *   e.g. the clients page's bulk action links `/runs/new?client_ids=a,b`, the library's "Run" button
 *   `/runs/new?script_id=<id>`.
 * - `/runs/$jid` — one run: a row per client, live while it runs (`?state=failed` filters by state).
 */
import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { parseComposeSearch } from '../lib/run-compose.js';
import { parseStateFilter, type StateFilter } from '../lib/run-jobs.js';
import { consoleRoute } from './console-route.js';

const runsRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/runs',
  validateSearch: (raw: Record<string, unknown>): { page?: number } => {
    const page = Number(raw.page);
    return Number.isInteger(page) && page > 1 ? { page } : {};
  },
  component: lazyRouteComponent(() => import('../pages/runs-page.js'), 'RunsPage'),
});

const newRunRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/runs/new',
  validateSearch: parseComposeSearch,
  component: lazyRouteComponent(() => import('../pages/run-new-page.js'), 'RunNewPage'),
});

const runRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/runs/$jid',
  validateSearch: (raw: Record<string, unknown>): { state?: StateFilter } => {
    const state = parseStateFilter(raw.state);
    return state === 'all' ? {} : { state };
  },
  component: lazyRouteComponent(() => import('../pages/run-page.js'), 'RunPage'),
});

export const runRoutes = [runsRoute, newRunRoute, runRoute] as const;
