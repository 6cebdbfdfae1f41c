import type { FastifyInstance } from 'fastify';
import { alertDeliverySchema, alertRuleViewSchema, parseListQuery, pickFields } from '@svc/protocol';
import { z } from 'zod';
import { ALERT_DELIVERY_LIST } from '../../core/alerts/alert-list.js';
import type { AlertsService } from '../../core/alerts/alerts-service.js';
import { callerOf } from '../auth.js';
import { data, documented, list, sparse, type ApiOperation } from '../openapi/operation.js';

const OPERATIONS = {
  deliveries: {
    tag: 'alerts',
    summary: 'The alert delivery log: each webhook and e-mail attempt, newest first',
    description:
      'Kept in the database: the newest `[alerts] log_size` attempts (older ones are deleted in the background), ' +
      'across restarts and, on a cluster, of every node (`node` says which one made the attempt).',
    list: ALERT_DELIVERY_LIST,
    access: 'administrators',
    responses: [list(sparse(alertDeliverySchema))],
  },
  rules: {
    tag: 'alerts',
    summary: 'The alert rules of the configuration ([[alerts.rules]]), without webhook secrets',
    access: 'administrators',
    responses: [data(z.array(alertRuleViewSchema))],
  },
} satisfies Record<string, ApiOperation>;

/** GET /alerts/deliveries and GET /alerts/rules (administrators). */
export function alertRoutes(app: FastifyInstance, alerts: AlertsService): void {
  app.get('/alerts/deliveries', documented(OPERATIONS.deliveries), async (request) => {
    const { user } = callerOf(request);
    const query = parseListQuery(request.query as Record<string, unknown>, ALERT_DELIVERY_LIST);
    const { data: items, count } = await alerts.deliveries(user, query);
    return { data: items.map((item) => pickFields(item, query.fields)), meta: { count } };
  });
  app.get('/alerts/rules', documented(OPERATIONS.rules), (request) =>
    Promise.resolve({ data: alerts.rules(callerOf(request).user) }),
  );
}
