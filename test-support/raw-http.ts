import { connect, type Socket } from 'node:net';

/** The WebSocket upgrade request an agent sends to svcd's agent listener, as raw bytes. */
export const AGENT_UPGRADE_REQUEST = [
  'GET / HTTP/1.1',
  'Host: svcd',
  'Upgrade: websocket',
  'Connection: Upgrade',
  'Sec-WebSocket-Version: 13',
  'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
  'Sec-WebSocket-Protocol: svc-v1',
  '',
  '',
].join('\r\n');

/** A raw TCP connection that has written some bytes and records what comes back until the server closes it. */
export interface RawConnection {
  socket: Socket;
  /** When the connection was established (ms since epoch). */
  openedAt: number;
  /** Everything received, when the server closes; rejects if it does not within `closeWithinMs`. */
  closed: Promise<{ received: string; closedAt: number }>;
}

export interface RawConnectOptions {
  /** Source address, e.g. 127.0.0.2, to appear as another peer. */
  localAddress?: string;
  /** Bound on how long the server may take to close the connection. */
  closeWithinMs?: number;
}

/** Connects, writes `payload` (possibly an incomplete request) and waits for the server to close. */
export function openRaw(
  port: number,
  payload: string,
  options: RawConnectOptions = {},
): Promise<RawConnection> {
  return new Promise((resolve, reject) => {
    const socket = connect({
      port,
      host: '127.0.0.1',
      ...(options.localAddress ? { localAddress: options.localAddress } : {}),
    });
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    const closeWithinMs = options.closeWithinMs ?? 20_000;
    const closed = new Promise<{ received: string; closedAt: number }>((resolveClose, rejectClose) => {
      const timer = setTimeout(() => {
        socket.destroy();
        rejectClose(new Error(`server did not close the connection within ${closeWithinMs} ms`));
      }, closeWithinMs);
      socket.once('close', () => {
        clearTimeout(timer);
        resolveClose({ received: Buffer.concat(chunks).toString('utf8'), closedAt: Date.now() });
      });
    });
    // A reset after the server's answer is a close like any other here.
    socket.on('error', () => undefined);
    socket.once('connect', () => {
      if (payload !== '') socket.write(payload);
      resolve({ socket, openedAt: Date.now(), closed });
    });
    socket.once('error', reject);
  });
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary JSON
  json: any;
}

/** Parses the first HTTP response in `text`; throws when there is none. */
export function parseResponse(text: string): RawResponse {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`no HTTP response in ${JSON.stringify(text.slice(0, 200))}`);
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = headers['content-length'];
  const body = text.slice(end + 4, length === undefined ? undefined : end + 4 + Number(length));
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { status, headers, body, json };
}

/** Sends `request` as is on a new connection; the server answers and closes (the request says Connection: close). */
export async function rawRequest(
  port: number,
  request: string,
  options: RawConnectOptions = {},
): Promise<RawResponse> {
  const connection = await openRaw(port, request, options);
  return parseResponse((await connection.closed).received);
}
