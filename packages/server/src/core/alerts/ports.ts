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
