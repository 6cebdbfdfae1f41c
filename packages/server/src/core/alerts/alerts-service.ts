import { randomUUID } from 'node:crypto';
import type { AlertDelivery, AlertRuleView, ListQuery } from '@svc/protocol';
import type { Clock } from '../auth/ports.js';
import { assertAdmin, type UserRecord } from '../users/user-store.js';
import type { AlertEvent, AlertRule } from './alert.js';
import type { AlertDispatcher } from './alert-dispatcher.js';
import type { AlertTimers } from './ports.js';

/** What the offline rules know of a client. */
export interface AlertClients {
  /** Name and tags of a client; undefined once it is deleted. */
  get(id: string): { name: string; tags: readonly string[]; connected: boolean } | undefined;
  /** The clients of these groups. */
  membersOf(groupIds: readonly string[]): Promise<string[]>;
}

export interface AlertsDeps {
  rules: readonly AlertRule[];
  dispatcher: AlertDispatcher;
  /** The stored delivery attempts (DeliveryLog). */
  log: { list(query: ListQuery): Promise<{ data: AlertDelivery[]; count: number }> };
  clients: AlertClients;
  clock: Clock;
  timers: AlertTimers;
  logger: { warn(obj: object, msg: string): void };
}

const hasFilter = (rule: AlertRule) =>
  Boolean(rule.client_ids?.length || rule.tags?.length || rule.group_ids?.length);

function withoutSecrets(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
}

/**
 * Alert rules: raises client_offline when a matching client stays disconnected for the rule's `after` (a timer
 * started on detach, cancelled on attach), run_failed and schedule_failed when told; hands each alert to the
 * dispatcher, which never holds up the caller.
 */
export class AlertsService {
  /** Offline timers by `<rule>\u0000<client>`. */
  private readonly offline = new Map<string, unknown>();

  constructor(private readonly deps: AlertsDeps) {}

  /** A client's connection ended: start the offline timer of each matching rule. */
  clientDetached(clientId: string): void {
    const since = this.deps.clock.now();
    for (const rule of this.deps.rules) {
      if (rule.event !== 'client_offline') continue;
      void this.matches(rule, clientId)
        .then((yes) => {
          if (yes) this.armOffline(rule, clientId, since);
        })
        .catch((err: unknown) =>
          this.deps.logger.warn({ err, rule: rule.name }, 'alerts: rule matching failed'),
        );
    }
  }

  /** A client connected again: no offline alert for it. */
  clientAttached(clientId: string): void {
    for (const rule of this.deps.rules) this.disarm(`${rule.name}\u0000${clientId}`);
  }

  /** A run ended with failed children (or a failed overall status). */
  runFailed(event: Omit<Extract<AlertEvent, { event: 'run_failed' }>, 'event'>): void {
    this.raise({ event: 'run_failed', ...event });
  }

  /** A schedule firing was recorded as failed. */
  scheduleFailed(event: Omit<Extract<AlertEvent, { event: 'schedule_failed' }>, 'event'>): void {
    this.raise({ event: 'schedule_failed', ...event });
  }

  /** Whether some rule listens for this event (callers skip their work otherwise). */
  wants(kind: AlertEvent['event']): boolean {
    return this.deps.rules.some((rule) => rule.event === kind);
  }

  /** Delivery attempts of every node, newest first by default (administrators only). */
  deliveries(
    user: Pick<UserRecord, 'groups'>,
    query: ListQuery,
  ): Promise<{ data: AlertDelivery[]; count: number }> {
    assertAdmin(user, 'the alert delivery log');
    return this.deps.log.list(query);
  }

  /** The configured rules without their secrets (administrators only). */
  rules(user: Pick<UserRecord, 'groups'>): AlertRuleView[] {
    assertAdmin(user, 'the alert rules');
    return this.deps.rules.map((rule) => ({
      name: rule.name,
      event: rule.event,
      after_sec: rule.afterMs === undefined ? null : rule.afterMs / 1000,
      client_ids: rule.client_ids ?? [],
      tags: rule.tags ?? [],
      group_ids: rule.group_ids ?? [],
      webhook_url: rule.webhook ? withoutSecrets(rule.webhook.url) : null,
      email: rule.email ?? [],
    }));
  }

  close(): void {
    for (const handle of this.offline.values()) this.deps.timers.clearTimeout(handle);
    this.offline.clear();
    this.deps.dispatcher.close();
  }

  private raise(body: AlertEvent, only?: AlertRule): void {
    for (const rule of only ? [only] : this.deps.rules) {
      if (rule.event !== body.event) continue;
      this.deps.dispatcher.enqueue(
        { id: randomUUID(), rule: rule.name, at: this.deps.clock.now().toISOString(), body },
        rule,
      );
    }
  }

  private armOffline(rule: AlertRule, clientId: string, since: Date): void {
    const key = `${rule.name}\u0000${clientId}`;
    this.disarm(key);
    const afterMs = rule.afterMs ?? 0;
    const handle = this.deps.timers.setTimeout(() => {
      this.offline.delete(key);
      const client = this.deps.clients.get(clientId);
      if (!client || client.connected) return;
      this.raise(
        {
          event: 'client_offline',
          client_id: clientId,
          client_name: client.name,
          offline_since: since.toISOString(),
          offline_for_sec: Math.round((this.deps.clock.now().getTime() - since.getTime()) / 1000),
        },
        rule,
      );
    }, afterMs);
    this.offline.set(key, handle);
  }

  private disarm(key: string): void {
    const handle = this.offline.get(key);
    if (handle === undefined) return;
    this.deps.timers.clearTimeout(handle);
    this.offline.delete(key);
  }

  private async matches(rule: AlertRule, clientId: string): Promise<boolean> {
    if (!hasFilter(rule)) return true;
    if (rule.client_ids?.includes(clientId)) return true;
    const client = this.deps.clients.get(clientId);
    if (client && rule.tags?.some((tag) => client.tags.includes(tag))) return true;
    if (rule.group_ids?.length) return (await this.deps.clients.membersOf(rule.group_ids)).includes(clientId);
    return false;
  }
}
