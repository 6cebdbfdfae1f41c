import type { Socket } from 'node:net';
import type { Duplex, Readable } from 'node:stream';
import type { SocketReadBuffer } from './socket-read-buffer.js';
import { WriteBatcher } from './write-batcher.js';

/** What the splice needs of an ssh2 channel: a duplex stream that can send EOF and CLOSE on its own. */
export interface SpliceChannel extends Duplex {
  eof(): void;
  close(): void;
}

type Listener = (...args: unknown[]) => void;

/**
 * Joins a TCP socket and an SSH channel in both directions with backpressure, keeping half-close: a peer
 * that ends its side still receives the whole reply, and no data queued behind the SSH window is lost.
 *
 * The socket must be created with `allowHalfOpen: true`, or Node ends its write side when the read side ends.
 * ssh2's channels send CLOSE right after EOF when their write side finishes (server side always), which cuts the
 * reply of a peer that half-closed; that listener is replaced by one that sends EOF only. CLOSE goes out when the
 * socket has closed and everything it sent has left the channel. When the other end closes the channel first,
 * the socket gets the rest of the data, then its input is discarded and it is closed.
 *
 * A socket created with `onread: reads.onread` is read through that `SocketReadBuffer` instead of 'data' events.
 * `relayed`, if given, is told the size of every chunk passed on, in either direction.
 */
export function splice(
  socket: Socket,
  channel: SpliceChannel,
  reads?: SocketReadBuffer,
  relayed: (bytes: number) => void = () => {},
): void {
  // ssh2 listens with one function on both events; found that way, not by its name, which a minifier changes.
  const onPrefinish = channel.listeners('prefinish');
  for (const listener of channel.listeners('finish') as Listener[])
    if (onPrefinish.includes(listener)) {
      channel.removeListener('finish', listener);
      channel.removeListener('prefinish', listener);
    }
  channel.once('finish', () => channel.eof());

  const stopReading = reads
    ? pumpReadsToChannel(socket, reads, channel, relayed)
    : pumpToChannel(socket, channel, relayed);
  pumpToSocket(channel, socket, relayed);

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
    stopReading();
    socket.resume();
    if (socket.writableFinished) return void socket.destroy();
    socket.once('finish', () => socket.destroy());
    if (!socket.writableEnded) socket.end();
  });
}

/** Bytes read from the socket that may wait for the SSH window before the socket is paused. */
const MAX_WAITING_FOR_WINDOW = 256 * 1024;

/**
 * `from.pipe(to)` for socket → channel, except that the socket is paused once 256 KiB wait for the SSH window
 * (ssh2's channels take 2 MiB before they push back). A connection whose far end is slow then keeps at most
 * 256 KiB in the process; the rest waits in the kernel's socket buffer. Returns a function that stops the pump.
 */
function pumpToChannel(from: Socket, to: Duplex, relayed: (bytes: number) => void): () => void {
  let waiting = 0;
  const onData = (chunk: Buffer) => {
    relayed(chunk.length);
    waiting += chunk.length;
    to.write(chunk, () => {
      waiting -= chunk.length;
      if (waiting <= MAX_WAITING_FOR_WINDOW / 2 && from.isPaused() && !to.destroyed) from.resume();
    });
    if (waiting >= MAX_WAITING_FOR_WINDOW) from.pause();
  };
  const onEnd = () => to.end();
  from.on('data', onData);
  from.once('end', onEnd);
  // A socket paused while its channel was being opened does not start flowing by itself.
  from.resume();
  return () => {
    from.off('data', onData);
    from.off('end', onEnd);
  };
}

/**
 * `pumpToChannel` for a socket read into a reused buffer: a chunk the channel did not copy at once (no window,
 * or earlier writes still waiting) stays with the channel, and the next read goes into a new buffer.
 */
function pumpReadsToChannel(
  from: Socket,
  reads: SocketReadBuffer,
  to: Duplex,
  relayed: (bytes: number) => void,
): () => void {
  let waiting = 0;
  const onChunk = (chunk: Buffer): boolean => {
    relayed(chunk.length);
    waiting += chunk.length;
    to.write(chunk, () => {
      waiting -= chunk.length;
      if (waiting <= MAX_WAITING_FOR_WINDOW / 2 && from.isPaused() && !to.destroyed) from.resume();
    });
    if (to.writableLength !== 0) reads.retain();
    if (waiting < MAX_WAITING_FOR_WINDOW) return true;
    from.pause();
    return false;
  };
  const onEnd = () => to.end();
  from.once('end', onEnd);
  if (reads.setHandler(onChunk)) from.resume();
  return () => {
    reads.setHandler(() => true);
    from.off('end', onEnd);
  };
}

/** Bytes written to the socket at most in one syscall (16 SSH packets). */
const MAX_BATCH_BYTES = 512 * 1024;

/** Bytes the socket may hold unsent before the channel is paused (the SSH window then holds the sender back). */
const MAX_UNSENT = 1024 * 1024;

/**
 * `from.pipe(to)` for channel → socket, except that the chunks that arrive within one turn of the event loop
 * leave in one socket write (up to 512 KiB). SSH delivers at most 32 KiB per packet; on a fast link one write
 * per packet costs more in the kernel than everything else svcd does with the bytes.
 */
function pumpToSocket(from: Readable, to: Socket, relayed: (bytes: number) => void): void {
  const batch = new WriteBatcher(MAX_BATCH_BYTES);
  let paused = false;
  const resume = () => {
    paused = false;
    from.resume();
  };
  const onData = (chunk: Buffer) => {
    relayed(chunk.length);
    batch.add(to, chunk.length, () => to.write(chunk));
    if (to.writableLength >= MAX_UNSENT && !paused) {
      paused = true;
      from.pause();
      to.once('drain', resume);
    }
  };
  from.on('data', onData);
  from.once('end', () => to.end());
  to.once('close', () => from.off('data', onData));
}
