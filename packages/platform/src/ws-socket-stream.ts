import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { FrameBatch } from './ws-frame-batch.js';
import { FrameReader } from './ws-frame-reader.js';
import { CLOSE_CODE, closePayload, controlFrame, OPCODE } from './ws-frames.js';

/**
 * Bytes buffered on the receiving side before the socket is paused. SSH packets are up to ~32 KiB: with the
 * default 16 KiB every message received would pause and resume the socket.
 */
const READABLE_HIGH_WATER_MARK = 1024 * 1024;

/** Bytes sent at most in one socket write (16 SSH packets). */
const MAX_BATCH_BYTES = 512 * 1024;

/**
 * Bytes in one frame at most: one SSH packet. Fewer, larger frames saved the sender little, and a receiver that
 * gathers frames (ws does) more than that (tunnel bench, 2026-11-25).
 */
const MAX_FRAME_BYTES = 32 * 1024;

/** How long a socket is given to close after the close handshake (or a protocol error) before it is cut. */
const CLOSE_TIMEOUT_MS = 5000;

/** The peer broke the WebSocket protocol; the stream was closed with `code`. */
export class WebSocketProtocolError extends Error {
  override readonly name = 'WebSocketProtocolError';
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(`WebSocket protocol error: ${message} (closed with ${code})`);
  }
}

export interface WebSocketStreamOptions {
  /** A client masks what it sends and requires unmasked frames; a server the reverse (RFC 6455 5.1). */
  role: 'client' | 'server';
  /** Largest binary message accepted (the server's limit on agents); 0 or undefined for none. */
  maxMessageBytes?: number | undefined;
  /** Bytes read past the opening handshake: the first frame data. */
  head?: Buffer | undefined;
  /** A server's answer to the opening handshake, sent with the first frames (one socket write, not two). */
  opening?: string | undefined;
}

/**
 * An open WebSocket (after the opening handshake) over a TCP or TLS socket, as a byte stream for ssh2: written
 * bytes leave as binary frames, and the payload of the binary frames received is read in the order it came.
 *
 * Writes: the chunks written within one turn of the event loop leave in one socket write (up to 512 KiB), one
 * frame per chunk up to 32 KiB; a client masks written chunks of 1 KiB or more in place instead of into a copy
 * (ssh2 builds a new Buffer for every packet and never reads it again). A write completes once it is queued:
 * ssh2 never waits for its writes (SSH channel windows bound what it sends); a failed send destroys the stream.
 *
 * Reads: frames are parsed straight from the socket's chunks and their payload pushed as slices of them. Pings
 * are answered, a close frame is answered and ends the stream, and a protocol error closes the WebSocket with its
 * status code and destroys the stream with a WebSocketProtocolError. The socket is paused while more than 1 MiB
 * waits to be read.
 */
export class WebSocketStream extends Duplex {
  private readonly batch: FrameBatch;
  private readonly reader: FrameReader;
  private readonly mask: boolean;
  private closeSent = false;
  private socketEnding = false;
  private socketPaused = false;
  /** A close frame arrived, or the peer's TCP end: nothing more is pushed. */
  private readEnded = false;
  private started = false;
  private head: Buffer | undefined;
  /** Data received while held back (see holdInbound), and who to tell when some arrives. */
  private held: { payloads: Buffer[]; onHeld: () => void } | undefined;

  constructor(
    /** The TCP or TLS socket the frames travel on. */
    readonly socket: Socket,
    options: WebSocketStreamOptions,
  ) {
    super({ readableHighWaterMark: READABLE_HIGH_WATER_MARK, allowHalfOpen: false });
    this.mask = options.role === 'client';
    this.batch = new FrameBatch({
      maxBytes: MAX_BATCH_BYTES,
      maxFrameBytes: MAX_FRAME_BYTES,
      mask: this.mask,
      socket: () => (socket.writable ? socket : new Error('WebSocket is not open: its socket is closed')),
      onError: (err) => this.destroy(err),
    });
    if (options.opening !== undefined) this.batch.prepend(Buffer.from(options.opening, 'latin1'));
    this.reader = new FrameReader({
      masked: options.role === 'server',
      maxMessageBytes: options.maxMessageBytes ?? 0,
      handler: {
        data: (payload) => {
          if (this.readEnded) return;
          if (this.held) return this.keep(payload);
          if (!this.push(payload)) this.socketPaused = true;
        },
        control: (opcode, payload) => this.onControl(opcode, payload),
        protocolError: (code, message) => this.protocolError(code, message),
      },
    });
    socket.setNoDelay(true);
    socket.on('data', this.onData);
    socket.on('end', this.onSocketEnd);
    socket.on('error', this.onSocketError);
    socket.on('close', this.onSocketClose);
    this.head = options.head;
    // Reading starts with the first _read, or in the next turn of the event loop if nothing reads sooner (pings
    // are still answered): by then the caller listens, and an error in the first bytes is not lost.
    socket.pause();
    setImmediate(() => this.start());
  }

  private readonly onData = (chunk: Buffer): void => {
    this.reader.push(chunk);
    if (this.socketPaused) this.socket.pause();
  };

  /** The peer closed TCP without a close frame: what was read is all there is, and the connection is over. */
  private readonly onSocketEnd = (): void => {
    this.endReadable();
    this.endSocket();
  };

  private endReadable(): void {
    this.readEnded = true;
    this.push(null);
  }

  /**
   * Keeps received data back instead of passing it on (the socket is paused while some is kept), until
   * releaseInbound; `onHeld` is told, once, when the first data is kept. Lets a reader (the handshake limiter) wait
   * for its turn before it reads what the peer sent. Nothing more is read from the socket meanwhile (pings and
   * a close wait too), so a peer cannot make it keep more than what arrived at once. If the peer goes away
   * meanwhile, what was kept is dropped with the stream.
   */
  holdInbound(onHeld: () => void): void {
    this.held ??= { payloads: [], onHeld };
  }

  /** Passes on what was kept back, in order, and stops holding. */
  releaseInbound(): void {
    const held = this.held;
    if (!held) return;
    this.held = undefined;
    if (this.readEnded || this.destroyed) return;
    for (const payload of held.payloads) if (!this.push(payload)) this.socketPaused = true;
    if (!this.socketPaused && this.started) this.socket.resume();
  }

  private keep(payload: Buffer): void {
    const held = this.held!;
    held.payloads.push(payload);
    this.socket.pause();
    if (held.payloads.length === 1) held.onHeld();
  }

  private readonly onSocketError = (err: Error): void => {
    this.destroy(err);
  };

  /** ssh2 waits for 'close' to notice the end of the connection, also when the peer just vanished. */
  private readonly onSocketClose = (): void => {
    this.destroy();
  };

  override _read(): void {
    if (!this.started) return this.start();
    if (!this.socketPaused) return;
    this.socketPaused = false;
    this.socket.resume();
  }

  private start(): void {
    if (this.started || this.destroyed) return;
    this.started = true;
    const { head } = this;
    this.head = undefined;
    if (head && head.length > 0) this.onData(head);
    if (!this.socketPaused && !this.destroyed) this.socket.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    // After a close frame nothing may be sent; the peer would not read it.
    if (!this.closeSent) this.batch.add(chunk);
    callback();
  }

  /** What is queued goes out before the close frame, in the same socket write (one syscall, not two). */
  override _final(callback: (error?: Error | null) => void): void {
    if (this.closeSent || !this.socket.writable) {
      this.batch.flush();
      return callback();
    }
    this.socket.cork();
    this.batch.flush();
    this.sendClose(CLOSE_CODE.normal);
    this.socket.uncork();
    // The peer answers with its close frame, which ends the readable side; a peer that never does is cut.
    const timer = setTimeout(() => this.socket.destroy(), CLOSE_TIMEOUT_MS);
    timer.unref();
    this.socket.once('close', () => clearTimeout(timer));
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.socket.off('data', this.onData);
    this.socket.off('end', this.onSocketEnd);
    this.socket.off('close', this.onSocketClose);
    // Errors after this are of no interest, but must not go unhandled.
    this.socket.off('error', this.onSocketError);
    this.socket.on('error', ignore);
    if (!this.socketEnding) this.socket.destroy();
    callback(error);
  }

  private onControl(opcode: number, payload: Buffer): void {
    if (opcode === OPCODE.ping) {
      if (!this.closeSent && this.socket.writable)
        this.socket.write(controlFrame(OPCODE.pong, payload, this.mask));
      return;
    }
    if (opcode !== OPCODE.close) return;
    if (payload.length === 1) return this.protocolError(CLOSE_CODE.protocolError, 'close frame of 1 byte');
    if (payload.length >= 2 && !validCloseCode(payload.readUInt16BE(0)))
      return this.protocolError(CLOSE_CODE.protocolError, `invalid close code ${payload.readUInt16BE(0)}`);
    if (!this.closeSent) {
      this.batch.flush();
      // Echo the peer's status code (RFC 6455 5.5.1).
      this.sendClose(payload.length >= 2 ? payload.readUInt16BE(0) : undefined);
    }
    this.endReadable();
    this.endSocket();
  }

  private protocolError(code: number, message: string): void {
    this.readEnded = true;
    if (!this.closeSent && this.socket.writable) this.sendClose(code, message);
    this.endSocket();
    this.destroy(new WebSocketProtocolError(code, message));
  }

  private sendClose(code: number | undefined, reason = ''): void {
    this.closeSent = true;
    if (!this.socket.writable) return;
    const payload = code === undefined ? Buffer.alloc(0) : closePayload(code, reason);
    this.socket.write(controlFrame(OPCODE.close, payload, this.mask));
  }

  /** Ends the socket after what was written, and cuts it if it is not closed in time. */
  private endSocket(): void {
    if (this.socketEnding) return;
    this.socketEnding = true;
    this.socket.end();
    const timer = setTimeout(() => this.socket.destroy(), CLOSE_TIMEOUT_MS);
    timer.unref();
    this.socket.once('close', () => clearTimeout(timer));
  }
}

const ignore = () => undefined;

/** Close codes a peer may send (RFC 6455 7.4). */
function validCloseCode(code: number): boolean {
  return (
    (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) ||
    (code >= 3000 && code <= 4999)
  );
}
