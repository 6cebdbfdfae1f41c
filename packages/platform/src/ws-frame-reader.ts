import { CLOSE_CODE, MAX_CONTROL_PAYLOAD, OPCODE } from './ws-frames.js';
import { maskInPlace } from './ws-mask.js';

/** What the reader finds in the frames. */
export interface FrameHandler {
  /** A piece of a binary message's payload (a slice of the chunk read, unmasked in place). */
  data(payload: Buffer): void;
  /** A whole ping, pong or close frame. */
  control(opcode: number, payload: Buffer): void;
  /** The peer broke RFC 6455 (or our limits): close with `code`. Nothing more is read. */
  protocolError(code: number, message: string): void;
}

/** The longest frame header: 2 bytes, 8 of length, 4 of masking key. */
const MAX_HEADER = 14;
/** Lengths above 2^53 - 1 cannot be counted in a number (and are far above any limit). */
const MAX_HIGH_WORD = 2 ** 21 - 1;

/**
 * Parses WebSocket frames (RFC 6455 5.2) straight from the socket's chunks. A binary message's payload is handed
 * on as slices of the chunks it arrived in, never gathered: the byte stream above does not care where frames
 * end. A server (`masked`: frames must be masked) unmasks in place; the chunks are its own.
 */
export class FrameReader {
  private readonly header = Buffer.allocUnsafe(MAX_HEADER);
  private headerBytes = 0;
  private readonly key = Buffer.allocUnsafe(4);
  private masked = false;
  /** Payload bytes of the current frame still to come; -1 between frames. */
  private remaining = -1;
  private payloadOffset = 0;
  private opcode = 0;
  private control: Buffer | undefined;
  /** A binary message was started by a frame without FIN. */
  private inMessage = false;
  private messageBytes = 0;
  private failed = false;

  constructor(
    private readonly options: {
      /** Whether frames arrive masked: a server's reader requires it, a client's refuses it. */
      masked: boolean;
      /** Largest binary message accepted; 0 for no limit. */
      maxMessageBytes: number;
      handler: FrameHandler;
    },
  ) {}

  push(chunk: Buffer): void {
    let pos = 0;
    while (pos < chunk.length && !this.failed) {
      if (this.remaining < 0) pos = this.readHeader(chunk, pos);
      else pos = this.readPayload(chunk, pos);
    }
  }

  private readHeader(chunk: Buffer, pos: number): number {
    // The common case: the whole header is in this chunk.
    if (this.headerBytes === 0 && chunk.length - pos >= 2) {
      const length = headerLength(chunk[pos + 1] as number);
      if (chunk.length - pos >= length) {
        this.startFrame(chunk, pos);
        return pos + length;
      }
    }
    // The header spans chunks: gather it.
    const want = this.headerBytes < 2 ? 2 : headerLength(this.header[1] as number);
    const take = Math.min(want - this.headerBytes, chunk.length - pos);
    chunk.copy(this.header, this.headerBytes, pos, pos + take);
    this.headerBytes += take;
    pos += take;
    if (this.headerBytes >= 2 && this.headerBytes === headerLength(this.header[1] as number)) {
      this.headerBytes = 0;
      this.startFrame(this.header, 0);
    }
    return pos;
  }

  private startFrame(buf: Buffer, at: number): void {
    const b0 = buf[at] as number;
    const b1 = buf[at + 1] as number;
    const fin = (b0 & 0x80) !== 0;
    const opcode = b0 & 0x0f;
    this.masked = (b1 & 0x80) !== 0;
    let length = b1 & 0x7f;
    let next = at + 2;
    if (length === 126) {
      length = buf.readUInt16BE(next);
      next += 2;
    } else if (length === 127) {
      const high = buf.readUInt32BE(next);
      if (high > MAX_HIGH_WORD) return this.fail(CLOSE_CODE.tooBig, 'frame length over 2^53 bytes');
      length = high * 2 ** 32 + buf.readUInt32BE(next + 4);
      next += 8;
    }
    if (this.masked) buf.copy(this.key, 0, next, next + 4);

    if ((b0 & 0x70) !== 0)
      return this.fail(CLOSE_CODE.protocolError, 'RSV bits set without a negotiated extension');
    if (this.masked !== this.options.masked)
      return this.fail(
        CLOSE_CODE.protocolError,
        this.options.masked ? 'unmasked frame from a client' : 'masked frame from a server',
      );
    if (opcode >= 0x8) {
      if (opcode !== OPCODE.close && opcode !== OPCODE.ping && opcode !== OPCODE.pong)
        return this.fail(CLOSE_CODE.protocolError, `unknown opcode 0x${opcode.toString(16)}`);
      if (!fin) return this.fail(CLOSE_CODE.protocolError, 'fragmented control frame');
      if (length > MAX_CONTROL_PAYLOAD)
        return this.fail(CLOSE_CODE.protocolError, `control frame of ${length} bytes (125 at most)`);
      this.control = Buffer.allocUnsafe(length);
    } else {
      if (opcode === OPCODE.text)
        return this.fail(CLOSE_CODE.unsupportedData, 'text frame: this WebSocket carries binary data only');
      if (opcode === OPCODE.binary) {
        if (this.inMessage)
          return this.fail(CLOSE_CODE.protocolError, 'new message before the fragmented one ended');
        this.messageBytes = 0;
      } else if (opcode === OPCODE.continuation) {
        if (!this.inMessage)
          return this.fail(CLOSE_CODE.protocolError, 'continuation frame without a message');
      } else return this.fail(CLOSE_CODE.protocolError, `unknown opcode 0x${opcode.toString(16)}`);
      this.messageBytes += length;
      const max = this.options.maxMessageBytes;
      if (max > 0 && this.messageBytes > max)
        return this.fail(CLOSE_CODE.tooBig, `message of ${this.messageBytes} bytes or more (limit ${max})`);
      this.inMessage = !fin;
    }
    this.opcode = opcode;
    this.remaining = length;
    this.payloadOffset = 0;
    if (length === 0) this.endFrame();
  }

  private readPayload(chunk: Buffer, pos: number): number {
    const take = Math.min(this.remaining, chunk.length - pos);
    const payload = chunk.subarray(pos, pos + take);
    if (this.masked) maskInPlace(payload, this.key, this.payloadOffset);
    if (this.control) payload.copy(this.control, this.payloadOffset);
    else this.options.handler.data(payload);
    this.payloadOffset += take;
    this.remaining -= take;
    if (this.remaining === 0) this.endFrame();
    return pos + take;
  }

  private endFrame(): void {
    this.remaining = -1;
    const { control } = this;
    if (!control) return;
    this.control = undefined;
    this.options.handler.control(this.opcode, control);
  }

  private fail(code: number, message: string): void {
    this.failed = true;
    this.options.handler.protocolError(code, message);
  }
}

/** Header bytes of a frame, from its second byte (mask bit and 7-bit length). */
function headerLength(b1: number): number {
  const length = b1 & 0x7f;
  return 2 + (length === 126 ? 2 : length === 127 ? 8 : 0) + (b1 & 0x80 ? 4 : 0);
}
