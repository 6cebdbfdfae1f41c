import { once } from 'node:events';
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { acceptUpgrade, upgradeHeaderProblem, type WebSocketStream } from '@svc/platform';

export const PROTOCOL = 'svc-v1';

const cleanups: (() => Promise<void> | void)[] = [];

/** Closes every peer started by the helpers below; call from afterEach. */
export async function closePeers(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}

const urlOf = (server: { address(): AddressInfo | string | null }) =>
  `ws://127.0.0.1:${(server.address() as AddressInfo).port}/agent`;

/**
 * A ws WebSocketServer (the independent implementation) choosing our subprotocol. `raw` holds the bytes its
 * sockets received, copied before ws unmasks them.
 */
export async function wsServer(options: { maxPayload?: number } = {}) {
  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    perMessageDeflate: false,
    handleProtocols: (offered) => (offered.has(PROTOCOL) ? PROTOCOL : false),
    ...options,
  });
  await once(wss, 'listening');
  const raw: Buffer[] = [];
  const connections: WebSocket[] = [];
  const waiting: ((ws: WebSocket) => void)[] = [];
  wss.on('connection', (ws: WebSocket, req: IncomingMessage) => {
    req.socket.prependListener('data', (chunk: Buffer) => raw.push(Buffer.from(chunk)));
    const waiter = waiting.shift();
    if (waiter) waiter(ws);
    else connections.push(ws);
  });
  cleanups.push(() => {
    for (const ws of wss.clients) ws.terminate();
    return new Promise<void>((resolve) => wss.close(() => resolve()));
  });
  return {
    url: urlOf(wss),
    raw,
    /** The next connection accepted. */
    connection: (): Promise<WebSocket> =>
      new Promise((resolve) => {
        const ready = connections.shift();
        if (ready) resolve(ready);
        else waiting.push(resolve);
      }),
  };
}

/**
 * An HTTP server whose upgrades open a WebSocketStream in the server role (as svcd's agent listener does);
 * `onOpen` gets each stream in the turn it opened.
 */
export async function streamServer(
  options: { maxMessageBytes?: number; onOpen?: (stream: WebSocketStream) => void } = {},
) {
  const server = createHttpServer((_req, res) => res.writeHead(426).end());
  const streams: WebSocketStream[] = [];
  const waiting: ((stream: WebSocketStream) => void)[] = [];
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const problem = upgradeHeaderProblem(req.headers);
    if (problem) {
      socket.end(`HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n`);
      return;
    }
    const stream = acceptUpgrade(
      socket as Socket,
      { headers: req.headers, head },
      { protocol: PROTOCOL, maxMessageBytes: options.maxMessageBytes ?? 0 },
    );
    stream.on('error', () => undefined);
    options.onOpen?.(stream);
    const waiter = waiting.shift();
    if (waiter) waiter(stream);
    else streams.push(stream);
  });
  await listen(server);
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return {
    url: urlOf(server),
    stream: (): Promise<WebSocketStream> =>
      new Promise((resolve) => {
        const ready = streams.shift();
        if (ready) resolve(ready);
        else waiting.push(resolve);
      }),
  };
}

/** A plain TCP server handing each connection to `onSocket` (a peer that says exactly what a test wants). */
export async function rawServer(onSocket: (socket: Socket) => void) {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    onSocket(socket);
  });
  await listen(server);
  cleanups.push(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: urlOf(server), port: (server.address() as AddressInfo).port };
}

async function listen(server: Server | ReturnType<typeof createHttpServer>): Promise<void> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
}

/** Reads until `length` bytes arrived, leaving the stream open. */
export function readBytes(stream: Duplex, length: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let got = 0;
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      parts.push(Buffer.from(chunk));
      got += chunk.length;
      if (got < length) return;
      stream.off('data', onData);
      stream.off('error', reject);
      resolve(Buffer.concat(parts));
    };
    stream.on('data', onData);
    stream.once('error', reject);
  });
}

/** A masked frame built byte by byte, as RFC 6455 5.3 says, independently of the code under test. */
export function clientFrame(
  opcode: number,
  payload: Buffer,
  options: { fin?: boolean; rsv?: number; mask?: boolean } = {},
): Buffer {
  const { fin = true, rsv = 0, mask = true } = options;
  const key = Buffer.from([0x37, 0xfa, 0x21, 0x3d]);
  const length = payload.length;
  const extended = length < 126 ? Buffer.alloc(0) : Buffer.alloc(length < 65_536 ? 2 : 8);
  if (extended.length === 2) extended.writeUInt16BE(length);
  if (extended.length === 8) extended.writeBigUInt64BE(BigInt(length));
  const first = Buffer.from([
    (fin ? 0x80 : 0) | (rsv << 4) | opcode,
    (mask ? 0x80 : 0) | (length < 126 ? length : length < 65_536 ? 126 : 127),
  ]);
  const body = Buffer.from(payload);
  if (mask) for (let i = 0; i < body.length; i++) body[i] = (body[i] as number) ^ (key[i % 4] as number);
  return Buffer.concat([first, extended, mask ? key : Buffer.alloc(0), body]);
}
