import { randomBytes } from 'node:crypto';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { acceptFor } from './ws-accept.js';
import { WebSocketStream } from './ws-socket-stream.js';

/** The response head may be this long at most. */
const MAX_HEAD_BYTES = 16 * 1024;
/** Bytes of a refusal's body kept for the error. */
const MAX_BODY_BYTES = 4 * 1024;
const HEAD_END = Buffer.from('\r\n\r\n');

export interface WebSocketConnectOptions {
  /** The subprotocol asked for; the server must choose it. */
  protocol: string;
  /** Limit for connecting, TLS and the upgrade response together. */
  timeoutMs: number;
  /** PEM certificates trusted for wss:// instead of the system's CAs. */
  ca?: string | undefined;
  signal?: AbortSignal | undefined;
  /**
   * The local address to connect from (the socket is bound to it first, port chosen by the kernel), e.g. one of
   * several 127.x addresses so that many connections to one server do not share one address pair's ports.
   */
  localAddress?: string | undefined;
  /** More request headers (name: value). */
  headers?: Readonly<Record<string, string>> | undefined;
  /**
   * Told of each interim answer (1xx but 101) before the final one, e.g. a server keeping the upgrade waiting; each
   * restarts the `timeoutMs` deadline.
   */
  onInterim?: ((status: number, headers: ReadonlyMap<string, string>) => void) | undefined;
}

/**
 * The opening handshake failed. `code` is set as Node sets it on network errors where it means the same
 * (ECONNRESET: closed before answering; ETIMEDOUT), `status` and `body` when the server answered without upgrading,
 * and `retryAfterMs` when that answer had a Retry-After in seconds.
 */
export class WebSocketHandshakeError extends Error {
  override readonly name = 'WebSocketHandshakeError';
  constructor(
    message: string,
    readonly details: { code?: string; status?: number; body?: string; retryAfterMs?: number } = {},
  ) {
    super(message);
  }

  get code(): string | undefined {
    return this.details.code;
  }
}

/**
 * Opens a WebSocket to a ws:// or wss:// URL as a byte stream (client role, see WebSocketStream): the opening
 * handshake of RFC 6455 4.1 over node:net, or node:tls (loaded only for wss://), without node:http. Rejects with
 * the socket's own error (TLS errors keep their codes), or a WebSocketHandshakeError.
 */
export async function connectWebSocket(
  url: string,
  options: WebSocketConnectOptions,
): Promise<WebSocketStream> {
  const target = new URL(url);
  if (target.protocol !== 'ws:' && target.protocol !== 'wss:')
    throw new WebSocketHandshakeError(`${url} is not a ws:// or wss:// URL`);
  const secure = target.protocol === 'wss:';
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(target.port) || (secure ? 443 : 80);
  const tls = secure ? await import('node:tls') : undefined;
  options.signal?.throwIfAborted();
  const from = options.localAddress === undefined ? {} : { localAddress: options.localAddress };
  const socket: Socket = tls
    ? tls.connect({
        host,
        port,
        ...from,
        ...(isIP(host) === 0 ? { servername: host } : {}),
        ...(options.ca === undefined ? {} : { ca: options.ca }),
      })
    : netConnect({ host, port, ...from });
  const key = randomBytes(16).toString('base64');
  socket.write(
    `GET ${target.pathname}${target.search} HTTP/1.1\r\n` +
      `Host: ${target.host}\r\n` +
      'Upgrade: websocket\r\n' +
      'Connection: Upgrade\r\n' +
      `Sec-WebSocket-Key: ${key}\r\n` +
      'Sec-WebSocket-Version: 13\r\n' +
      `Sec-WebSocket-Protocol: ${options.protocol}\r\n` +
      Object.entries(options.headers ?? {})
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('') +
      '\r\n',
  );
  return new Promise<WebSocketStream>((resolve, reject) => {
    let received: Buffer = Buffer.alloc(0);
    let refusal: Refusal | undefined;

    const finish = (error: Error | undefined) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
      if (!error) return;
      socket.on('error', () => undefined);
      socket.destroy();
      reject(error);
    };
    const onAbort = () =>
      finish(options.signal?.reason instanceof Error ? options.signal.reason : new Error('aborted'));
    const onError = (err: Error) => finish(err);
    const onClose = () =>
      finish(
        refusal
          ? refused(refusal, received)
          : new WebSocketHandshakeError(
              'the server closed the connection before answering the upgrade (socket hang up)',
              {
                code: 'ECONNRESET',
              },
            ),
      );
    const timer = setTimeout(
      () =>
        finish(
          new WebSocketHandshakeError(`the opening handshake timed out after ${options.timeoutMs} ms`, {
            code: 'ETIMEDOUT',
          }),
        ),
      options.timeoutMs,
    );

    const onData = (chunk: Buffer) => {
      received = received.length === 0 ? chunk : Buffer.concat([received, chunk]);
      if (refusal) {
        if (received.length - refusal.bodyStart >= refusal.bodyLength) finish(refused(refusal, received));
        return;
      }
      const end = received.indexOf(HEAD_END);
      if (end < 0) {
        if (received.length > MAX_HEAD_BYTES)
          finish(new WebSocketHandshakeError(`the upgrade response head is over ${MAX_HEAD_BYTES} bytes`));
        return;
      }
      const response = parseHead(received.subarray(0, end).toString('latin1'));
      if (!response) return finish(new WebSocketHandshakeError('the server did not answer with HTTP'));
      if (response.status >= 100 && response.status < 200 && response.status !== 101) {
        // An interim answer: the final one follows (RFC 9110 15.2), and the server is still at it.
        received = received.subarray(end + HEAD_END.length);
        timer.refresh();
        options.onInterim?.(response.status, response.headers);
        return onData(Buffer.alloc(0));
      }
      if (response.status !== 101) {
        const length = Number(response.headers.get('content-length') ?? MAX_BODY_BYTES);
        refusal = {
          status: response.status,
          reason: response.reason,
          retryAfterMs: retryAfterMs(response.headers.get('retry-after')),
          bodyStart: end + HEAD_END.length,
          bodyLength: Math.min(Number.isFinite(length) ? length : MAX_BODY_BYTES, MAX_BODY_BYTES),
        };
        return onData(Buffer.alloc(0));
      }
      const problem = upgradeResponseProblem(response.headers, key, options.protocol);
      if (problem) return finish(new WebSocketHandshakeError(problem));
      finish(undefined);
      // The stream resumes the socket; until then, nothing read is lost.
      socket.pause();
      resolve(
        new WebSocketStream(socket, { role: 'client', head: received.subarray(end + HEAD_END.length) }),
      );
    };

    options.signal?.addEventListener('abort', onAbort, { once: true });
    socket.on('data', onData);
    socket.on('error', onError);
    socket.on('close', onClose);
  });
}

interface ResponseHead {
  status: number;
  reason: string;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Map<string, string>;
}

function parseHead(text: string): ResponseHead | undefined {
  const [statusLine = '', ...lines] = text.split('\r\n');
  const match = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(statusLine);
  if (!match) return undefined;
  const headers = new Map<string, string>();
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    const before = headers.get(name);
    headers.set(name, before === undefined ? value : `${before}, ${value}`);
  }
  return { status: Number(match[1]), reason: match[2] ?? '', headers };
}

/** What makes a 101 answer not the upgrade asked for (RFC 6455 4.1, the client's checks), or undefined. */
function upgradeResponseProblem(
  headers: Map<string, string>,
  key: string,
  protocol: string,
): string | undefined {
  if (headers.get('upgrade')?.toLowerCase() !== 'websocket')
    return 'the 101 response has no "Upgrade: websocket"';
  const connection = (headers.get('connection') ?? '').toLowerCase().split(',');
  if (!connection.some((token) => token.trim() === 'upgrade'))
    return 'the 101 response has no "Connection: upgrade"';
  if (headers.get('sec-websocket-accept') !== acceptFor(key))
    return 'the 101 response has a wrong Sec-WebSocket-Accept';
  const chosen = headers.get('sec-websocket-protocol');
  if (chosen !== protocol)
    return chosen === undefined
      ? `the server did not choose the subprotocol ${protocol}`
      : `the server chose the subprotocol ${chosen}, not ${protocol}`;
  if (headers.has('sec-websocket-extensions'))
    return `the server chose extensions that were not offered (${headers.get('sec-websocket-extensions') ?? ''})`;
  return undefined;
}

interface Refusal {
  status: number;
  reason: string;
  retryAfterMs: number | undefined;
  bodyStart: number;
  bodyLength: number;
}

/** A Retry-After of delay-seconds (RFC 9110 10.2.3) in ms; an HTTP date or anything else is ignored. */
function retryAfterMs(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{1,6}$/.test(value)) return undefined;
  return Number(value) * 1000;
}

function refused(refusal: Refusal, received: Buffer): Error {
  const body = received.subarray(refusal.bodyStart, refusal.bodyStart + MAX_BODY_BYTES).toString('utf8');
  return new WebSocketHandshakeError(
    `Unexpected server response: ${refusal.status} ${refusal.reason}`.trim(),
    {
      status: refusal.status,
      body,
      ...(refusal.retryAfterMs === undefined ? {} : { retryAfterMs: refusal.retryAfterMs }),
    },
  );
}
