import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createWebSocketStream, type WebSocket } from 'ws';
import { WriteBatcher } from './write-batcher.js';

/**
 * Bytes buffered on the receiving side before backpressure applies. SSH packets are up to ~32 KiB: with the
 * default 16 KiB every message received would pause and resume the socket.
 */
const READABLE_HIGH_WATER_MARK = 1024 * 1024;

/** Frames sent at most in one socket write (16 SSH packets). */
const MAX_BATCH_BYTES = 512 * 1024;

/**
 * The WebSocket as a byte stream for ssh2, tuned for bulk tunnel traffic: the SSH packets written within one
 * turn of the event loop leave together (one writev of all their frames, up to 512 KiB) instead of one syscall
 * each.
 *
 * A write completes once its frame is queued on the socket. ssh2 never waits for its writes (SSH channel windows
 * bound what it sends), so waiting for the socket would only hold the next packets back to a later turn; a
 * failed send closes the WebSocket, which ends this stream with the error.
 */
export function webSocketByteStream(ws: WebSocket): Duplex {
  const stream = createWebSocketStream(ws, { readableHighWaterMark: READABLE_HIGH_WATER_MARK });
  const write = stream._write.bind(stream);
  const batch = new WriteBatcher(MAX_BATCH_BYTES);
  // ws keeps its socket in `_socket` (its own stream wrapper reads it too).
  const socket = () => (ws as unknown as { _socket?: Socket | null })._socket ?? undefined;
  const onSent = (err?: Error) => err && stream.destroy(err);
  const send = (chunk: Buffer) => batch.add(socket(), chunk.length, () => ws.send(chunk, onSent));
  stream._write = (chunk: Buffer, encoding, callback) => {
    // Until the WebSocket is open, ws's own stream queues the write.
    if (ws.readyState !== ws.OPEN) return write(chunk, encoding, callback);
    send(chunk);
    callback();
  };
  return stream;
}
