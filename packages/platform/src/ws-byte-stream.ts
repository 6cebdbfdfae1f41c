import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createWebSocketStream, type WebSocket } from 'ws';
import { FrameBatch } from './ws-frame-batch.js';

/**
 * Bytes buffered on the receiving side before backpressure applies. SSH packets are up to ~32 KiB: with the
 * default 16 KiB every message received would pause and resume the socket.
 */
const READABLE_HIGH_WATER_MARK = 1024 * 1024;

/** Bytes sent at most in one socket write (16 SSH packets). */
const MAX_BATCH_BYTES = 512 * 1024;

/**
 * Bytes in one frame at most: one SSH packet. ws's receiver copies a frame that spans its 64 KiB socket reads
 * into a new Buffer; frames of 16 packets made svcd spend more on that copy (and page faults) than the agent
 * saved (tunnel bench, 2026-11-25).
 */
const MAX_FRAME_BYTES = 32 * 1024;

/**
 * The WebSocket as a byte stream for ssh2, tuned for bulk tunnel traffic: the SSH packets written within one
 * turn of the event loop leave in one socket write (up to 512 KiB), one frame each, written here rather than by
 * `ws.send`. A client masks written chunks of 1 KiB or more in place instead of into a copy: ssh2 builds a new
 * Buffer for every packet and never reads it again.
 *
 * A write completes once it is queued. ssh2 never waits for its writes (SSH channel windows bound what it
 * sends), so waiting for the socket would only hold the next packets back to a later turn; a failed send
 * destroys this stream with the error.
 */
export function webSocketByteStream(ws: WebSocket): Duplex {
  const stream = createWebSocketStream(ws, { readableHighWaterMark: READABLE_HIGH_WATER_MARK });
  const write = stream._write.bind(stream);
  const final = stream._final.bind(stream);
  // ws keeps its socket in `_socket` (its own stream wrapper reads it too).
  const socket = () => (ws as unknown as { _socket?: Socket | null })._socket ?? undefined;
  const batch = new FrameBatch({
    maxBytes: MAX_BATCH_BYTES,
    maxFrameBytes: MAX_FRAME_BYTES,
    mask: !(ws as unknown as { _isServer: boolean })._isServer,
    socket: () => {
      const current = socket();
      return ws.readyState === ws.OPEN && current ? current : new Error('WebSocket is not open');
    },
    onError: (err) => stream.destroy(err),
  });
  stream._write = (chunk: Buffer, encoding, callback) => {
    // Until the WebSocket is open, ws's own stream queues the write.
    if (ws.readyState !== ws.OPEN) return write(chunk, encoding, callback);
    batch.add(chunk);
    callback();
  };
  // What is queued goes out before ws's close frame.
  stream._final = (callback) => {
    batch.flush();
    final(callback);
  };
  return stream;
}
