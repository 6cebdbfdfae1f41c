import type { Socket } from 'node:net';
import { frameHeader, OPCODE, randomMaskKey } from './ws-frames.js';
import { maskInPlace } from './ws-mask.js';

/**
 * Chunks shorter than this are copied before masking: ssh2 writes its identification line from a constant
 * Buffer shared by all its connections. Its packets, larger, are new Buffers that it never reads again.
 */
export const MIN_MASKED_IN_PLACE = 1024;

/**
 * The chunks written to a WebSocket within one turn of the event loop (up to `maxBytes`), sent as binary frames
 * of up to `maxFrameBytes` in one socket write. The client masks each frame as RFC 6455 requires (a fresh random
 * key per frame), in place for chunks of `MIN_MASKED_IN_PLACE` bytes or more: those are the caller's no longer.
 */
export class FrameBatch {
  private chunks: Buffer[] = [];
  private bytes = 0;
  private scheduled = false;
  /** Raw bytes to send before the next frames (a server's 101 answer). */
  private preamble: Buffer | undefined;

  constructor(
    private readonly options: {
      maxBytes: number;
      /** Bytes in one frame at most (a chunk larger than this gets a frame of its own). */
      maxFrameBytes: number;
      /** Whether frames are masked (a client's are). */
      mask: boolean;
      /** The socket to write to, or an error if the WebSocket is no longer open. */
      socket: () => Socket | Error;
      onError: (err: Error) => void;
    },
  ) {}

  /** Queues `chunk`; a client overwrites it if it is `MIN_MASKED_IN_PLACE` bytes or more. */
  add(chunk: Buffer): void {
    if (this.options.mask && chunk.length < MIN_MASKED_IN_PLACE) chunk = Buffer.from(chunk);
    if (this.bytes > 0 && this.bytes + chunk.length > this.options.maxBytes) this.flush();
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    if (this.bytes >= this.options.maxBytes) return this.flush();
    this.schedule();
  }

  /**
   * Sends `raw` as it is, before the frames written within this turn of the event loop and in the same socket
   * write: a server's 101 answer and its first frames reach the agent together.
   */
  prepend(raw: Buffer): void {
    this.preamble = this.preamble ? Buffer.concat([this.preamble, raw]) : raw;
    this.schedule();
  }

  flush(): void {
    const { preamble } = this;
    if (this.bytes === 0 && !preamble) return;
    const { chunks } = this;
    this.chunks = [];
    this.bytes = 0;
    this.preamble = undefined;
    const socket = this.options.socket();
    if (socket instanceof Error) return this.options.onError(socket);
    socket.cork();
    if (preamble) socket.write(preamble);
    if (chunks.length === 0) return void socket.uncork();
    let first = 0;
    let frameBytes = 0;
    for (const [i, chunk] of chunks.entries()) {
      if (frameBytes > 0 && frameBytes + chunk.length > this.options.maxFrameBytes) {
        this.writeFrame(socket, chunks, first, i, frameBytes);
        first = i;
        frameBytes = 0;
      }
      frameBytes += chunk.length;
    }
    this.writeFrame(socket, chunks, first, chunks.length, frameBytes, true);
    socket.uncork();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private writeFrame(
    socket: Socket,
    chunks: Buffer[],
    from: number,
    to: number,
    bytes: number,
    last = false,
  ): void {
    const key = this.options.mask ? randomMaskKey() : undefined;
    socket.write(frameHeader(OPCODE.binary, bytes, key));
    let offset = 0;
    for (let i = from; i < to; i++) {
      const chunk = chunks[i] as Buffer;
      if (key) maskInPlace(chunk, key, offset);
      offset += chunk.length;
      if (last && i === to - 1) socket.write(chunk, (err) => err && this.options.onError(err));
      else socket.write(chunk);
    }
  }
}
