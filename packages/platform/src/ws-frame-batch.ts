import { randomFillSync } from 'node:crypto';
import type { Socket } from 'node:net';
import * as wsModule from 'ws';
import { pooledRandomFill } from './pooled-random-fill.js';

/** ws's frame builder (public, but not in @types/ws); with `readOnly: false` it masks `data` in place. */
interface SenderStatic {
  frame(
    data: Buffer,
    options: {
      fin: boolean;
      opcode: number;
      mask: boolean;
      readOnly: boolean;
      rsv1: boolean;
      maskBuffer: Buffer;
      generateMask: (mask: Buffer) => void;
    },
  ): Buffer[];
}
const { Sender } = wsModule as unknown as { Sender: SenderStatic };

const OPCODE_BINARY = 0x2;
const FIN = 0x80;
const MASKED = 0x80;
const randomFill = pooledRandomFill(randomFillSync);
const keepKey = () => undefined;

/**
 * Chunks shorter than this are copied before masking: ssh2 writes its identification line from a constant
 * Buffer shared by all its connections. Its packets, larger, are new Buffers that it never reads again.
 */
export const MIN_MASKED_IN_PLACE = 1024;

/** The header of one final binary frame of `length` bytes, with the masking key if there is one (RFC 6455 5.2). */
function frameHeader(length: number, key: Buffer | undefined): Buffer {
  const lengthBytes = length < 126 ? 0 : length < 65_536 ? 2 : 8;
  const header = Buffer.allocUnsafe(2 + lengthBytes + (key ? 4 : 0));
  header[0] = FIN | OPCODE_BINARY;
  header[1] = (key ? MASKED : 0) | (lengthBytes === 0 ? length : lengthBytes === 2 ? 126 : 127);
  if (lengthBytes === 2) header.writeUInt16BE(length, 2);
  if (lengthBytes === 8) {
    header.writeUInt32BE(Math.floor(length / 2 ** 32), 2);
    header.writeUInt32BE(length >>> 0, 6);
  }
  key?.copy(header, 2 + lengthBytes);
  return header;
}

/**
 * The chunks written to a WebSocket within one turn of the event loop (up to `maxBytes`), sent as binary frames
 * of up to `maxFrameBytes` in one socket write. Through `ws.send`, every 32 KiB SSH packet cost a new Buffer and
 * a copy for masking, and ws's per-message work. The client masks each frame as RFC 6455 requires (a fresh random
 * key per frame), in place for chunks of `MIN_MASKED_IN_PLACE` bytes or more: those are the caller's no longer.
 */
export class FrameBatch {
  private chunks: Buffer[] = [];
  private bytes = 0;
  private scheduled = false;

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
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  flush(): void {
    if (this.bytes === 0) return;
    const { chunks } = this;
    this.chunks = [];
    this.bytes = 0;
    const socket = this.options.socket();
    if (socket instanceof Error) return this.options.onError(socket);
    socket.cork();
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

  private writeFrame(
    socket: Socket,
    chunks: Buffer[],
    from: number,
    to: number,
    bytes: number,
    last = false,
  ): void {
    const key = this.options.mask ? randomFill(Buffer.allocUnsafe(4)) : undefined;
    socket.write(frameHeader(bytes, key));
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

/** XORs `chunk`, which starts `offset` bytes into the frame's payload, with the frame's masking key. */
function maskInPlace(chunk: Buffer, key: Buffer, offset: number): void {
  const phase = offset & 3;
  const maskBuffer =
    phase === 0
      ? key
      : Buffer.from([
          key[phase] ?? 0,
          key[(phase + 1) & 3] ?? 0,
          key[(phase + 2) & 3] ?? 0,
          key[(phase + 3) & 3] ?? 0,
        ]);
  Sender.frame(chunk, {
    fin: true,
    opcode: OPCODE_BINARY,
    mask: true,
    readOnly: false,
    rsv1: false,
    maskBuffer,
    generateMask: keepKey,
  });
}
