/**
 * Target for the tunnel benchmark: a TCP server on 127.0.0.1 (free port, printed as `{"port":N}` on stdout once it
 * listens). Each connection starts with one ASCII line:
 *   `U <bytes>\n`: the sink counts what follows and answers `OK\n` once <bytes> have arrived (upload);
 *   `D <bytes>\n`: the sink sends <bytes> bytes in 64 KiB chunks and ends (download).
 * Connections that close before sending a header (readiness probes) are ignored.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Socket } from 'node:net';

const CHUNK = randomBytes(64 * 1024);
const MAX_HEADER = 64;

function upload(socket: Socket, size: number, already: number): void {
  let received = already;
  const check = () => {
    if (received >= size) {
      socket.removeAllListeners('data');
      socket.end('OK\n');
    }
  };
  socket.on('data', (chunk: Buffer) => {
    received += chunk.length;
    check();
  });
  check();
}

function download(socket: Socket, size: number): void {
  let left = size;
  const pump = () => {
    while (left > 0) {
      const piece = left >= CHUNK.length ? CHUNK : CHUNK.subarray(0, left);
      left -= piece.length;
      if (!socket.write(piece)) {
        socket.once('drain', pump);
        return;
      }
    }
    socket.end();
  };
  socket.resume();
  pump();
}

const server = createServer({ allowHalfOpen: true }, (socket) => {
  socket.setNoDelay(true);
  socket.on('error', () => socket.destroy());
  let downloading = false;
  // A peer that half-closes before its transfer is complete (or a probe) gets its end too; downloads finish on their own.
  socket.on('end', () => {
    if (!downloading && !socket.writableEnded) socket.end();
  });
  let pending = Buffer.alloc(0);
  const onHeader = (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    const newline = pending.indexOf(10);
    if (newline < 0) {
      if (pending.length > MAX_HEADER) socket.destroy();
      return;
    }
    socket.off('data', onHeader);
    const match = /^([UD]) (\d+)$/.exec(pending.subarray(0, newline).toString('latin1'));
    const rest = pending.length - newline - 1;
    if (!match?.[1] || !match[2]) {
      socket.destroy();
      return;
    }
    const size = Number(match[2]);
    if (match[1] === 'U') upload(socket, size, rest);
    else {
      downloading = true;
      download(socket, size);
    }
  };
  socket.on('data', onHeader);
});

server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('tunnel-sink: no TCP address');
  process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => process.exit(0));
}
