import type { AlertDelivery } from '@svc/protocol';
import type { Clock } from '../auth/ports.js';
import { alertJson, alertMail, type Alert, type AlertRule } from './alert.js';
import { retryDelayMs } from './backoff.js';
import type { AlertTimers, DeliveryRecorder, MailSender, WebhookPoster } from './ports.js';
import { SIGNATURE_HEADER, signAlert, TIMESTAMP_HEADER } from './signature.js';

export interface DispatcherDeps {
  webhook: WebhookPoster;
  /** Absent when no [smtp] server is configured (config validation refuses email rules then). */
  mail?: MailSender;
  /** Where each attempt is recorded (the delivery log); never waited for. */
  log: DeliveryRecorder;
  clock: Clock;
  timers: AlertTimers;
  logger: { warn(obj: object, msg: string): void };
  maxAttempts: number;
  retryBaseMs: number;
  /** Deliveries waiting or in flight at most; more are dropped. */
  queueSize: number;
  /** Deliveries in flight at once. */
  concurrency?: number;
}

interface Delivery {
  alert: Alert;
  rule: AlertRule;
  channel: 'webhook' | 'email';
  attempt: number;
}

/** The part of a URL safe to log: no user info, no query (either may carry a token). */
function safeTarget(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
}

const reasonOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * Delivers alerts by webhook and e-mail in the background: `enqueue` never waits and never throws. A bounded
 * queue (overflow dropped, logged and counted), a few deliveries at once, a failed attempt retried after
 * retry_base, 2×, 4× … up to max_attempts; every attempt goes into the delivery log.
 */
export class AlertDispatcher {
  private readonly waiting: Delivery[] = [];
  private inFlight = 0;
  /** Deliveries waiting for a retry timer. */
  private readonly retrying = new Map<Delivery, unknown>();
  private closed = false;
  /** Attempts by outcome since start (the metrics mirror them). */
  readonly counts: Record<AlertDelivery['outcome'], number> = {
    delivered: 0,
    retrying: 0,
    given_up: 0,
    dropped: 0,
  };

  constructor(private readonly deps: DispatcherDeps) {}

  enqueue(alert: Alert, rule: AlertRule): void {
    if (rule.webhook) this.push({ alert, rule, channel: 'webhook', attempt: 1 });
    if (rule.email) this.push({ alert, rule, channel: 'email', attempt: 1 });
  }

  /** Deliveries not finished (waiting, in flight or waiting to retry). */
  get pending(): number {
    return this.waiting.length + this.inFlight + this.retrying.size;
  }

  close(): void {
    this.closed = true;
    for (const handle of this.retrying.values()) this.deps.timers.clearTimeout(handle);
    this.retrying.clear();
    this.waiting.length = 0;
  }

  private push(delivery: Delivery): void {
    if (this.closed) return;
    if (this.pending >= this.deps.queueSize) {
      this.record(delivery, 'dropped', null, `the alert queue is full (${this.deps.queueSize})`);
      this.deps.logger.warn(
        { rule: delivery.rule.name, channel: delivery.channel, alert: delivery.alert.id },
        'alert dropped: the delivery queue is full',
      );
      return;
    }
    this.waiting.push(delivery);
    this.pump();
  }

  private pump(): void {
    while (!this.closed && this.inFlight < (this.deps.concurrency ?? 4) && this.waiting.length > 0) {
      const next = this.waiting.shift() as Delivery;
      this.inFlight += 1;
      void this.attempt(next).finally(() => {
        this.inFlight -= 1;
        this.pump();
      });
    }
  }

  private async attempt(delivery: Delivery): Promise<void> {
    let status: number | null = null;
    let error = '';
    try {
      if (delivery.channel === 'webhook') {
        status = await this.postWebhook(delivery);
        if (status < 200 || status > 299) error = `the receiver answered HTTP ${status}`;
      } else {
        const mail = this.deps.mail;
        if (!mail) throw new Error('no [smtp] server is configured');
        const { subject, text } = alertMail(delivery.alert);
        await mail.send(delivery.rule.email ?? [], subject, text);
      }
    } catch (err) {
      error = reasonOf(err);
    }
    if (!error) {
      this.record(delivery, 'delivered', status, '');
      return;
    }
    if (delivery.attempt >= this.deps.maxAttempts || this.closed) {
      this.record(delivery, 'given_up', status, error);
      this.deps.logger.warn(
        { rule: delivery.rule.name, channel: delivery.channel, attempts: delivery.attempt, reason: error },
        'alert not delivered; gave up',
      );
      return;
    }
    this.record(delivery, 'retrying', status, error);
    const retry = { ...delivery, attempt: delivery.attempt + 1 };
    const handle = this.deps.timers.setTimeout(
      () => {
        this.retrying.delete(retry);
        if (this.closed) return;
        this.waiting.push(retry);
        this.pump();
      },
      retryDelayMs(delivery.attempt, this.deps.retryBaseMs),
    );
    this.retrying.set(retry, handle);
  }

  private postWebhook(delivery: Delivery): Promise<number> {
    const hook = delivery.rule.webhook as { url: string; secret: string };
    const body = alertJson(delivery.alert);
    const timestamp = Math.floor(this.deps.clock.now().getTime() / 1000);
    return this.deps.webhook.post(hook.url, body, {
      'content-type': 'application/json',
      [TIMESTAMP_HEADER]: String(timestamp),
      [SIGNATURE_HEADER]: signAlert(hook.secret, timestamp, body),
      'x-svc-delivery': `${delivery.alert.id}/${delivery.attempt}`,
    });
  }

  private record(
    delivery: Delivery,
    outcome: AlertDelivery['outcome'],
    status: number | null,
    error: string,
  ): void {
    this.counts[outcome] += 1;
    this.deps.log.add({
      alert_id: delivery.alert.id,
      rule: delivery.rule.name,
      event: delivery.alert.body.event,
      channel: delivery.channel,
      target:
        delivery.channel === 'webhook'
          ? safeTarget(delivery.rule.webhook?.url ?? '')
          : (delivery.rule.email ?? []).join(', '),
      attempt: delivery.attempt,
      at: this.deps.clock.now().toISOString(),
      outcome,
      http_status: status,
      error,
    });
  }
}
