/** Moves bytes through a port that leads to bench/tunnel-sink.ts (directly or through a tunnel). */
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { HOST } from './child-processes.js';

export const SINK_SCRIPT = new URL('../tunnel-sink.ts', import.meta.url).pathname;
const CHUNK = randomBytes(64 * 1024);

/** Writes `bytes` of random data as fast as the socket takes them, until done or `stopped()`. */
export function writeRandomBytes(socket: Socket, bytes: number, stopped: () => boolean): void {
  let left = bytes;
  const pump = () => {
    while (left > 0 && !stopped()) {
      const piece = left >= CHUNK.length ? CHUNK : CHUNK.subarray(0, left);
      left -= piece.length;
      if (!socket.write(piece)) {
        socket.once('drain', pump);
        return;
      }
    }
  };
  pump();
}

/** `upload`: writes `bytes` and waits for the sink's OK; `download`: reads `bytes` the sink sends. */
export function sinkTransfer(
  port: number,
  direction: 'upload' | 'download',
  bytes: number,
  timeoutMs = 300_000,
): Promise<void> {
  return new Promise<void>((done, fail) => {
    const socket = connect({ host: HOST, port, allowHalfOpen: true, noDelay: true });
    let settled = false;
    const timer = setTimeout(
      () => finish(new Error(`${direction} via ${port}: no end in ${timeoutMs} ms`)),
      timeoutMs,
    );
    const finish = (err?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) fail(err);
      else done();
    };
    let received = 0;
    let reply = '';
    socket.once('error', finish);
    socket.once('end', () => finish(new Error(`${direction} via ${port} ended early (${received} bytes)`)));
    socket.once('connect', () => {
      if (direction === 'download') {
        socket.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received >= bytes) finish(received === bytes ? undefined : new Error(`got ${received} bytes`));
        });
        socket.write(`D ${bytes}\n`);
        return;
      }
      socket.on('data', (chunk: Buffer) => {
        reply += chunk.toString('latin1');
        if (reply.includes('\n')) finish(reply === 'OK\n' ? undefined : new Error(`sink said ${reply}`));
      });
      socket.write(`U ${bytes}\n`);
      writeRandomBytes(socket, bytes, () => settled);
    });
  });
}
