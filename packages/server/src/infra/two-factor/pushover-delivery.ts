import { CodeDeliveryError, type CodeDelivery } from '../../core/two-factor/ports.js';
import { MESSAGE_TITLE, messageText } from './message.js';

export interface PushoverSettings {
  apiToken: string;
  /** The messages endpoint; the public service unless a test or a relay says otherwise. */
  url: string;
  timeoutMs: number;
}

/** What Pushover answers: `status` 1 on success, otherwise `errors`. */
interface PushoverReply {
  status?: unknown;
  errors?: unknown;
}

async function readReply(response: Response): Promise<PushoverReply> {
  try {
    return (await response.json()) as PushoverReply;
  } catch {
    return {};
  }
}

/** A push message through Pushover's messages API; `two_fa_send_to` is the user's Pushover user key. */
export function pushoverDelivery(settings: PushoverSettings): CodeDelivery {
  return {
    method: 'pushover',
    async send(message) {
      const form = new URLSearchParams({
        token: settings.apiToken,
        user: message.sendTo,
        title: MESSAGE_TITLE,
        message: messageText(message),
        ttl: String(message.ttlSeconds),
      });
      let response: Response;
      try {
        response = await fetch(settings.url, {
          method: 'POST',
          body: form,
          signal: AbortSignal.timeout(settings.timeoutMs),
        });
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        throw new CodeDeliveryError(`Pushover (${settings.url}) could not be reached: ${reason}`, {
          cause: err,
        });
      }
      const reply = await readReply(response);
      if (response.ok && reply.status === 1) return;
      const errors = Array.isArray(reply.errors) ? reply.errors.map(String).join('; ') : '';
      throw new CodeDeliveryError(
        `Pushover refused the message (HTTP ${response.status}${errors ? `: ${errors}` : ''})`,
      );
    },
  };
}
