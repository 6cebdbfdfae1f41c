import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createWebSocketStream, type WebSocket } from 'ws';

/**
 * Bytes buffered on each side before backpressure applies. SSH packets are up to ~32 KiB: with the default
 * 16 KiB every message received would pause and resume the socket, and every packet sent would wait alone.
 */
const HIGH_WATER_MARK = 1024 * 1024;

/**
 * The WebSocket as a byte stream for ssh2, tuned for bulk tunnel traffic: SSH packets queued while a send is in
 * flight leave together in one socket write (one writev of all their frames) instead of one syscall each.
 */
export function webSocketByteStream(ws: WebSocket): Duplex {
  const stream = createWebSocketStream(ws, {
    readableHighWaterMark: HIGH_WATER_MARK,
    writableHighWaterMark: HIGH_WATER_MARK,
  });
  stream._writev = (chunks, callback) => {
    // ws keeps its socket in `_socket` (its own stream wrapper reads it too); corking makes the frames one write.
    const socket = (ws as unknown as { _socket?: Socket | null })._socket;
    socket?.cork();
    const last = chunks.length - 1;
    chunks.forEach(({ chunk }, i) => ws.send(chunk as Buffer, i === last ? callback : undefined));
    socket?.uncork();
  };
  return stream;
}
