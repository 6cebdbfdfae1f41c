import { z } from 'zod';
import { durationToMilliseconds, durationTypeError } from '@svc/platform';

const duration = z
  .union([z.number(), z.string()], { error: durationTypeError })
  .transform(durationToMilliseconds);

const httpUrl = z
  .string()
  .refine(
    (value) => URL.canParse(value) && ['http:', 'https:'].includes(new URL(value).protocol),
    'expected an http:// or https:// URL',
  )
  .refine((value) => !URL.canParse(value) || new URL(value).username === '', {
    message: 'must not carry user:password@ (put a token in the path or query instead)',
  });

const email = z.string().refine((value) => /^[^\s@]+@[^\s@]+$/.test(value), 'expected an e-mail address');

/** One `[[alerts.rules]]` table: what raises the alert and where it goes. */
const alertRule = z
  .strictObject({
    name: z.string().min(1).max(100),
    event: z.enum(['client_offline', 'run_failed', 'schedule_failed']),
    /** client_offline only: how long a client must stay offline before the alert. */
    after: duration
      .refine((ms) => ms >= 1000 && ms <= 30 * 86_400_000, 'must be between 1s and 30d')
      .optional(),
    /** client_offline only: which clients (any of them matches); none = every client. */
    client_ids: z.array(z.string().min(1)).optional(),
    tags: z.array(z.string().min(1)).optional(),
    group_ids: z.array(z.string().min(1)).optional(),
    webhook: z
      .strictObject({
        url: httpUrl,
        secret: z.string().min(16, 'must be at least 16 characters'),
      })
      .optional(),
    email: z.array(email).min(1).optional(),
  })
  .superRefine((rule, ctx) => {
    const problem = (path: string, message: string) =>
      ctx.addIssue({ code: 'custom', path: [path], message });
    if (!rule.webhook && !rule.email)
      problem('webhook', 'set webhook and/or email: an alert needs a channel');
    const filters = rule.client_ids ?? rule.tags ?? rule.group_ids;
    if (rule.event === 'client_offline') {
      if (rule.after === undefined) problem('after', 'client_offline needs after (e.g. "5m")');
    } else {
      if (rule.after !== undefined) problem('after', 'only client_offline takes after');
      if (filters) problem('client_ids', 'only client_offline takes client_ids, tags or group_ids');
    }
  });

export type AlertRuleConfig = z.output<typeof alertRule>;

export const alertsSection = z
  .strictObject({
    rules: z
      .array(alertRule)
      .default([])
      .superRefine((rules, ctx) => {
        const seen = new Set<string>();
        rules.forEach((rule, index) => {
          if (seen.has(rule.name))
            ctx.addIssue({
              code: 'custom',
              path: [index, 'name'],
              message: `duplicate rule name ${rule.name}`,
            });
          seen.add(rule.name);
        });
      })
      .describe(
        'Alert rules, each a [[alerts.rules]] table: name, event ("client_offline" with after, "run_failed", "schedule_failed"), optional client_ids/tags/group_ids (client_offline), webhook = { url, secret } and/or email = ["ops@example.com"] (sent with [smtp]).',
      ),
    webhook_timeout: duration
      .refine((ms) => ms >= 100 && ms <= 60_000, 'must be between 100ms and 1m')
      .prefault('10s')
      .describe('How long one webhook attempt may take.'),
    max_attempts: z
      .number()
      .int()
      .min(1)
      .max(10)
      .default(5)
      .describe('Attempts per delivery (the first and its retries) before it is given up.'),
    retry_base: duration
      .refine((ms) => ms >= 10 && ms <= 600_000, 'must be between 10ms and 10m')
      .prefault('2s')
      .describe(
        'Wait before the first retry; each further retry waits twice as long (capped at 10 minutes).',
      ),
    queue_size: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(1000)
      .describe('Deliveries waiting at most; more are dropped, logged and counted (a run is never held up).'),
    log_size: z
      .number()
      .int()
      .min(10)
      .max(100_000)
      .default(1000)
      .describe(
        'Delivery attempts kept in the database for GET /alerts/deliveries (the newest; older ones are deleted in the background).',
      ),
  })
  .describe(
    'Alerts: webhook and e-mail messages when a client stays offline, a run fails or a schedule fails.',
  );
