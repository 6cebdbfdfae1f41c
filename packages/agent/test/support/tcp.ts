/** TCP helpers for tunnel tests: targets behind the agent and clients in front of svcd. */
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { Writable } from 'node:stream';

export interface Target {
  server: Server;
  port: number;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1:0 with allowHalfOpen; destroys open connections on close. */
export async function startTarget(handler: (socket: Socket) => void): Promise<Target> {
  const sockets = new Set<Socket>();
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('close', () => sockets.delete(socket));
    handler(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

export interface Digest {
  bytes: number;
  sha256: string;
}

/** Reads a socket to its end. */
export function readAll(socket: Socket): Promise<Digest & { text: string }> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    let bytes = 0;
    let head = '';
    socket.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      bytes += chunk.length;
      if (head.length < 200) head += chunk.toString('latin1', 0, Math.min(chunk.length, 200));
    });
    socket.once('end', () => resolve({ bytes, sha256: hash.digest('hex'), text: head }));
    socket.once('error', reject);
    // A 'data' listener does not restart a stream that was paused explicitly.
    socket.resume();
  });
}

/** Writes `total` random bytes with backpressure, then ends; `progress` counts what was handed to the socket. */
export async function writeRandom(
  stream: Writable,
  total: number,
  progress: { written: number } = { written: 0 },
): Promise<Digest> {
  const hash = createHash('sha256');
  while (progress.written < total) {
    const chunk = randomBytes(Math.min(256 * 1024, total - progress.written));
    hash.update(chunk);
    progress.written += chunk.length;
    if (!stream.write(chunk)) {
      await new Promise<void>((resolve, reject) => {
        const done = () => {
          stream.off('drain', done);
          stream.off('close', closed);
          resolve();
        };
        const closed = () => reject(new Error('closed while writing'));
        stream.once('drain', done);
        stream.once('close', closed);
      });
    }
  }
  stream.end();
  return { bytes: total, sha256: hash.digest('hex') };
}

/** Connects with allowHalfOpen (so ending our side does not end the socket). */
export async function dial(port: number, host = '127.0.0.1'): Promise<Socket> {
  const socket = connect({ host, port, allowHalfOpen: true });
  await once(socket, 'connect');
  return socket;
}

/** How a connection ended: the bytes received and whether it was refused outright. */
export async function outcome(port: number): Promise<'refused' | { bytes: number }> {
  const socket = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
  return new Promise((resolve) => {
    let bytes = 0;
    let connected = false;
    socket.once('connect', () => (connected = true));
    socket.on('data', (chunk: Buffer) => (bytes += chunk.length));
    socket.on('error', () => undefined);
    socket.once('close', () => resolve(connected ? { bytes } : 'refused'));
    socket.once('end', () => socket.end());
  });
}
