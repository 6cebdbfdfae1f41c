import { z } from 'zod';

/** One delivery attempt of an alert (GET /alerts/deliveries). Never carries a webhook secret. */
export const alertDeliverySchema = z.object({
  id: z
    .number()
    .int()
    .describe('Increases with each attempt stored (one sequence for every node sharing the database).'),
  alert_id: z.string().describe('The alert; every attempt and channel of one alert share it.'),
  rule: z.string().describe('Name of the [[alerts.rules]] rule that raised it.'),
  event: z.enum(['client_offline', 'run_failed', 'schedule_failed']),
  channel: z.enum(['webhook', 'email']),
  target: z.string().describe('The webhook URL without user info and query, or the e-mail recipients.'),
  attempt: z.number().int().describe('1 for the first attempt, 2 for the first retry …'),
  at: z.string().describe('When the attempt ended (ISO 8601).'),
  outcome: z
    .enum(['delivered', 'retrying', 'given_up', 'dropped'])
    .describe(
      'retrying: failed, another attempt follows; given_up: the last attempt failed; dropped: the queue was full.',
    ),
  http_status: z
    .number()
    .int()
    .nullable()
    .describe("The webhook receiver's HTTP status; null without an answer or for e-mail."),
  error: z.string().describe('Why the attempt failed; empty when delivered.'),
  node: z.string().describe('The svcd that made the attempt: its [cluster] node_id, or its host name.'),
});
export type AlertDelivery = z.infer<typeof alertDeliverySchema>;

/** A configured rule as GET /alerts/rules shows it: the webhook's secret is left out. */
export const alertRuleViewSchema = z.object({
  name: z.string(),
  event: z.enum(['client_offline', 'run_failed', 'schedule_failed']),
  after_sec: z.number().nullable().describe('client_offline: seconds offline before the alert.'),
  client_ids: z.array(z.string()),
  tags: z.array(z.string()),
  group_ids: z.array(z.string()),
  webhook_url: z.string().nullable().describe('Without user info and query.'),
  email: z.array(z.string()),
});
export type AlertRuleView = z.infer<typeof alertRuleViewSchema>;
