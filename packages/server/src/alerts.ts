import type { Logger } from '@svc/platform';
import type { AlertDelivery } from '@svc/protocol';
import type { SvcdConfig } from './config/schema.js';
import { parseHostPort } from './config/schema.js';
import type { Clock } from './core/auth/ports.js';
import type { AlertRule } from './core/alerts/alert.js';
import { AlertDispatcher } from './core/alerts/alert-dispatcher.js';
import { AlertsService, type AlertClients } from './core/alerts/alerts-service.js';
import { DeliveryLog } from './core/alerts/delivery-log.js';
import { realTimers } from './core/alerts/ports.js';
import { RunWatch, type RunOutcome } from './core/alerts/run-watch.js';
import type { ClientEvents } from './core/clients/client-events.js';
import type { StoredFiring } from './core/schedules/ports.js';
import { fetchWebhookPoster } from './infra/alerts/webhook-poster.js';
import { smtpMailSender } from './infra/alerts/smtp-mail-sender.js';
import { SqlAlertDeliveryRepository } from './storage/alert-delivery-repository.js';
import type { Database } from './storage/database.js';

/** How long one alert e-mail may take. */
const MAIL_TIMEOUT_MS = 10_000;

export interface AlertParts {
  service: AlertsService;
  /** Delivery attempts by outcome since start (metrics). */
  counts(): Record<AlertDelivery['outcome'], number>;
  /** Give to MultiJobsService's afterRun (with the run's jid). */
  runDispatched(jid: string): void;
  /** Give to the scheduler's onFiring. */
  firing(firing: StoredFiring): void;
  /** Stops the rules and the deliveries, and writes the delivery log's waiting attempts. */
  close(): Promise<void>;
}

const toRule = (rule: SvcdConfig['alerts']['rules'][number]): AlertRule => ({
  name: rule.name,
  event: rule.event,
  ...(rule.after === undefined ? {} : { afterMs: rule.after }),
  ...(rule.client_ids ? { client_ids: rule.client_ids } : {}),
  ...(rule.tags ? { tags: rule.tags } : {}),
  ...(rule.group_ids ? { group_ids: rule.group_ids } : {}),
  ...(rule.webhook ? { webhook: rule.webhook } : {}),
  ...(rule.email ? { email: rule.email } : {}),
});

/** Wires `[alerts]`: rules, the dispatcher with its webhook and SMTP adapters, and the client-event hooks. */
export function buildAlerts(
  config: SvcdConfig,
  deps: {
    events: ClientEvents;
    clients: AlertClients;
    runOutcome: (jid: string) => Promise<RunOutcome | undefined>;
    clock: Clock;
    logger: Logger;
    /** Holds the delivery log, shared by the nodes of a cluster. */
    database: Database;
    /** This svcd in the delivery log: the cluster node id, or the host name. */
    nodeId: string;
  },
): AlertParts {
  const { alerts, smtp } = config;
  const rules = alerts.rules.map(toRule);
  const server = smtp.server ? parseHostPort(smtp.server) : undefined;
  const mail =
    server && smtp.sender_email
      ? smtpMailSender({
          host: server.host,
          port: server.port,
          senderEmail: smtp.sender_email,
          secure: smtp.secure,
          timeoutMs: MAIL_TIMEOUT_MS,
          ...(smtp.auth_username ? { username: smtp.auth_username, password: smtp.auth_password ?? '' } : {}),
        })
      : undefined;
  const log = new DeliveryLog({
    repository: new SqlAlertDeliveryRepository(deps.database),
    node: deps.nodeId,
    size: alerts.log_size,
    timers: realTimers,
    logger: deps.logger,
  });
  // A smaller log_size since the last start takes effect at once (in the background).
  void log.purge();
  const dispatcher = new AlertDispatcher({
    webhook: fetchWebhookPoster(alerts.webhook_timeout),
    ...(mail ? { mail } : {}),
    log,
    clock: deps.clock,
    timers: realTimers,
    logger: deps.logger,
    maxAttempts: alerts.max_attempts,
    retryBaseMs: alerts.retry_base,
    queueSize: alerts.queue_size,
  });
  const service = new AlertsService({
    rules,
    dispatcher,
    log,
    clients: deps.clients,
    clock: deps.clock,
    timers: realTimers,
    logger: deps.logger,
  });
  const unsubscribe: (() => void)[] = [];
  if (service.wants('client_offline')) {
    unsubscribe.push(
      deps.events.subscribe('detached', (event) => service.clientDetached(event.clientId)),
      deps.events.subscribe('attached', (event) => service.clientAttached(event.clientId)),
    );
  }
  const runs = new RunWatch({
    outcome: deps.runOutcome,
    failed: (jid, outcome) =>
      service.runFailed({
        jid,
        schedule_id: outcome.schedule_id,
        status: outcome.status,
        counts: outcome.counts,
      }),
    timers: realTimers,
    logger: deps.logger,
  });
  const watchRuns = service.wants('run_failed');
  if (watchRuns) unsubscribe.push(deps.events.subscribe('jobFinished', () => runs.jobFinished()));
  if (rules.length > 0) deps.logger.info({ rules: rules.map((rule) => rule.name) }, 'alert rules loaded');
  return {
    service,
    counts: () => dispatcher.counts,
    runDispatched: (jid) => {
      if (watchRuns) runs.dispatched(jid);
    },
    firing: (firing) => {
      if (firing.outcome === 'failed')
        service.scheduleFailed({
          schedule_id: firing.schedule_id,
          scheduled_at: firing.scheduled_at.toISOString(),
          reason: firing.reason,
        });
    },
    close: async () => {
      for (const stop of unsubscribe) stop();
      runs.close();
      service.close();
      await log.close();
    },
  };
}
