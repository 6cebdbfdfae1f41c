import type { AlertDelivery, ListQuery } from '@svc/protocol';

/** Posts a webhook; resolves with the HTTP status, rejects when no answer came (network, timeout). */
export interface WebhookPoster {
  post(url: string, body: string, headers: Record<string, string>): Promise<number>;
}

/** Sends an e-mail; rejects when the server did not take it. */
export interface MailSender {
  send(to: readonly string[], subject: string, text: string): Promise<void>;
}

/** Timers alerts wait with (tests drive fake ones). */
export interface AlertTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realTimers: AlertTimers = {
  setTimeout: (fn, ms) => {
    const handle = setTimeout(fn, ms);
    handle.unref();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** One attempt as the dispatcher records it; the log adds the node, the database the id. */
export type NewAlertDelivery = Omit<AlertDelivery, 'id' | 'node'>;

/** Where the dispatcher records each attempt; must neither wait nor throw. */
export interface DeliveryRecorder {
  add(entry: NewAlertDelivery): void;
}

/** The delivery log in the database (migration 025), shared by the nodes of a cluster. */
export interface AlertDeliveryRepository {
  /** Inserts the attempts in one or a few statements. */
  append(entries: readonly Omit<AlertDelivery, 'id'>[]): Promise<void>;
  list(query: ListQuery): Promise<{ data: AlertDelivery[]; count: number }>;
  /** Deletes all but the `keep` newest attempts (by id); returns how many went. */
  keepNewest(keep: number): Promise<number>;
}
