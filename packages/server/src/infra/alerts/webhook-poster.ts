import type { WebhookPoster } from '../../core/alerts/ports.js';

/** POSTs with fetch; no redirects followed (a signed alert goes where it was configured to), each attempt bounded. */
export function fetchWebhookPoster(timeoutMs: number): WebhookPoster {
  return {
    async post(url, body, headers) {
      let response: Response;
      try {
        response = await fetch(url, {
          method: 'POST',
          body,
          headers,
          redirect: 'manual',
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (err) {
        const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
        if (err instanceof Error && err.name === 'TimeoutError')
          throw new Error(`no answer within ${timeoutMs} ms`, { cause: err });
        throw new Error(`the request failed${cause || (err instanceof Error ? `: ${err.message}` : '')}`, {
          cause: err,
        });
      }
      // The answer's body is not needed; drop it so the connection is freed.
      await response.body?.cancel().catch(() => undefined);
      return response.status;
    },
  };
}
