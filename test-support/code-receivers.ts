import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** Something received, waited for by the next `next()` call. */
class Inbox<T> {
  private readonly items: T[] = [];
  private readonly waiters: ((item: T) => void)[] = [];

  push(item: T): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter(item);
    else this.items.push(item);
  }

  next(timeoutMs = 5000): Promise<T> {
    const item = this.items.shift();
    if (item !== undefined) return Promise.resolve(item);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('nothing received in time')), timeoutMs);
      this.waiters.push((received) => {
        clearTimeout(timer);
        resolve(received);
      });
    });
  }

  get size(): number {
    return this.items.length;
  }
}

export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
}

/** A real SMTP listener on loopback (plain, no STARTTLS offered) that keeps what it receives. */
export async function startSmtpReceiver() {
  const inbox = new Inbox<ReceivedMail>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        inbox.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    address: `127.0.0.1:${port}`,
    inbox,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface PushoverMessage {
  token: string;
  user: string;
  title: string;
  message: string;
  ttl: string;
}

/** A local HTTP server speaking Pushover's messages API; the user key `refused…` gets Pushover's 400. */
export async function startPushoverReceiver() {
  const inbox = new Inbox<PushoverMessage>();
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const message = Object.fromEntries(form) as unknown as PushoverMessage;
      response.setHeader('content-type', 'application/json');
      if (message.user.startsWith('refused')) {
        response.statusCode = 400;
        response.end(JSON.stringify({ user: 'invalid', errors: ['user identifier is invalid'], status: 0 }));
        return;
      }
      inbox.push(message);
      response.end(JSON.stringify({ status: 1, request: 'r1' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/1/messages.json`,
    inbox,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The six-digit code of a delivered message. */
export function codeIn(text: string): string {
  const match = /login code is (\d{6})/.exec(text);
  if (!match?.[1]) throw new Error(`no code in: ${text}`);
  return match[1];
}
