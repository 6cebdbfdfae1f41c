/** What an alert is about; the JSON body of a webhook is `{ rule, event, at, ...details }`. */
export type AlertEvent =
  | {
      event: 'client_offline';
      client_id: string;
      client_name: string;
      /** When the connection ended. */
      offline_since: string;
      offline_for_sec: number;
    }
  | {
      event: 'run_failed';
      jid: string;
      schedule_id: string | null;
      status: string;
      counts: Record<string, number>;
    }
  | {
      event: 'schedule_failed';
      schedule_id: string;
      scheduled_at: string;
      reason: string;
    };

export type AlertEventKind = AlertEvent['event'];

/** A configured rule (`[[alerts.rules]]`), durations in milliseconds. */
export interface AlertRule {
  name: string;
  event: AlertEventKind;
  /** client_offline: how long offline before the alert. */
  afterMs?: number;
  client_ids?: string[];
  tags?: string[];
  group_ids?: string[];
  webhook?: { url: string; secret: string };
  email?: string[];
}

/** One alert on its way: the rule that raised it and its body. */
export interface Alert {
  id: string;
  rule: string;
  at: string;
  body: AlertEvent;
}

/** The webhook's JSON (the same text is signed). */
export const alertJson = (alert: Alert): string =>
  JSON.stringify({ id: alert.id, rule: alert.rule, at: alert.at, ...alert.body });

/** Subject and text of an alert e-mail. */
export function alertMail(alert: Alert): { subject: string; text: string } {
  const b = alert.body;
  const subject =
    b.event === 'client_offline'
      ? `svc alert ${alert.rule}: client ${b.client_id}${b.client_name ? ` (${b.client_name})` : ''} offline for ${b.offline_for_sec} s`
      : b.event === 'run_failed'
        ? `svc alert ${alert.rule}: run ${b.jid} finished ${b.status}`
        : `svc alert ${alert.rule}: schedule ${b.schedule_id} failed`;
  return { subject, text: `${subject}\n\n${JSON.stringify({ ...b, at: alert.at }, null, 2)}\n` };
}
