import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/** What the splice needs of an ssh2 channel: a duplex stream that can send EOF and CLOSE on its own. */
export interface SpliceChannel extends Duplex {
  eof(): void;
  close(): void;
}

type Listener = (...args: unknown[]) => void;

/**
 * Joins a TCP socket and an SSH channel in both directions with backpressure (pipe), keeping half-close: a peer
 * that ends its side still receives the whole reply, and no data queued behind the SSH window is lost.
 *
 * The socket must be created with `allowHalfOpen: true`, or Node ends its write side when the read side ends.
 * ssh2's channels send CLOSE right after EOF when their write side finishes (server side always), which cuts the
 * reply of a peer that half-closed; that listener is replaced by one that sends EOF only. CLOSE goes out when the
 * socket has closed and everything it sent has left the channel. When the other end closes the channel first,
 * the socket gets the rest of the data, then its input is discarded and it is closed.
 */
export function splice(socket: Socket, channel: SpliceChannel): void {
  for (const event of ['finish', 'prefinish'] as const)
    for (const listener of channel.listeners(event) as Listener[])
      if (listener.name === 'onFinish') channel.removeListener(event, listener);
  channel.once('finish', () => channel.eof());

  socket.pipe(channel);
  channel.pipe(socket);

  socket.on('close', (hadError: boolean) => {
    // A socket that closed without a clean end of its input was cut off: nothing more is coming, close now.
    if (hadError || !socket.readableEnded || channel.writableFinished) channel.close();
    else channel.once('finish', () => channel.close());
  });
  socket.on('error', () => channel.close());
  channel.on('error', () => socket.destroy());
  channel.on('close', () => {
    if (socket.destroyed || socket.readableEnded) return;
    // The other end is gone but our peer is still sending: drop its input, let our output drain, then close.
    socket.unpipe(channel);
    socket.resume();
    if (socket.writableFinished) return void socket.destroy();
    socket.once('finish', () => socket.destroy());
    if (!socket.writableEnded) socket.end();
  });
}
