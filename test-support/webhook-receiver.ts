import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** When it arrived (ms since the epoch). */
  at: number;
  /** What the receiver answered. */
  status: number;
}

/**
 * A real HTTP server on loopback that keeps every request. `answers[path]` lists the statuses to answer there in
 * turn (then 200), so a test can make the first attempt fail.
 */
export async function startWebhookReceiver(answers: Record<string, number[]> = {}) {
  const received: ReceivedWebhook[] = [];
  const waiters: { match: (r: ReceivedWebhook) => boolean; resolve: (r: ReceivedWebhook) => void }[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '/';
      const status = answers[path]?.shift() ?? 200;
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(request.headers)) headers[name] = String(value);
      const item = { path, headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now(), status };
      received.push(item);
      for (const waiter of [...waiters]) {
        if (!waiter.match(item)) continue;
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(item);
      }
      response.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'try again');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    received,
    /** The first request (past or future) that matches, or an error after `timeoutMs`. */
    next(match: (r: ReceivedWebhook) => boolean, timeoutMs = 20_000): Promise<ReceivedWebhook> {
      const seen = received.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no matching webhook in time')), timeoutMs);
        waiters.push({
          match,
          resolve: (r) => {
            clearTimeout(timer);
            resolve(r);
          },
        });
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
