/**
 * The Schedules area: commands and scripts run on many clients by a cron expression.
 *
 * - `/schedules` — every schedule with its next run and last firing (`?page=N`).
 * - `/schedules/new` — create one.
 * - `/schedules/$id` — one schedule: what, when and where, edit, delete, and its firings with their runs.
 */
import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { consoleRoute } from './console-route.js';

const schedulesRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/schedules',
  validateSearch: (raw: Record<string, unknown>): { page?: number } => {
    const page = Number(raw.page);
    return Number.isInteger(page) && page > 1 ? { page } : {};
  },
  component: lazyRouteComponent(() => import('../pages/schedules-page.js'), 'SchedulesPage'),
});

const newScheduleRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/schedules/new',
  component: lazyRouteComponent(() => import('../pages/schedule-new-page.js'), 'ScheduleNewPage'),
});

const scheduleRoute = createRoute({
  getParentRoute: () => consoleRoute,
  path: '/schedules/$id',
  component: lazyRouteComponent(() => import('../pages/schedule-page.js'), 'SchedulePage'),
});

export const scheduleRoutes = [schedulesRoute, newScheduleRoute, scheduleRoute] as const;
