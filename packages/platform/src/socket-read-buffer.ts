import type { OnReadOpts } from 'node:net';

/**
 * Bytes read from the socket at most in one syscall, as Node's own reads. 256 KiB was measured too: svc spent
 * less in the kernel, but svcd, receiving larger bursts, spent more (tunnel bench, 2026-11-25).
 */
const DEFAULT_SIZE = 64 * 1024;

/** Receives each chunk read; returns false to pause the socket. */
export type ChunkHandler = (chunk: Buffer) => boolean;

/**
 * Reads a socket into one reused buffer (`net.connect({ onread })`) instead of a fresh Buffer per read: no
 * allocation or garbage per read while the handler copies each chunk at once (an SSH channel copies into its
 * packets while its window is open). A handler that keeps a reference to a chunk
 * calls `retain()`: the next read then goes into a new buffer.
 */
export class SocketReadBuffer {
  readonly onread: OnReadOpts;
  private buffer: Buffer;
  private retained = false;
  private handler: ChunkHandler | undefined;
  /** Chunks read before a handler was set (copied). */
  private early: Buffer[] = [];

  constructor(private readonly size = DEFAULT_SIZE) {
    this.buffer = Buffer.allocUnsafe(size);
    this.onread = {
      buffer: () => this.next(),
      callback: (bytes, buffer) => this.deliver(Buffer.from(buffer.buffer, buffer.byteOffset, bytes)),
    };
  }

  /** Sets who receives the chunks; chunks read before are passed first. Returns false if they ask to pause. */
  setHandler(handler: ChunkHandler): boolean {
    this.handler = handler;
    let more = true;
    for (const chunk of this.early.splice(0)) more = handler(chunk) && more;
    return more;
  }

  /** The chunk being handled stays referenced: it must not be overwritten by the next read. */
  retain(): void {
    this.retained = true;
  }

  private next(): Buffer {
    if (this.retained) {
      this.buffer = Buffer.allocUnsafe(this.size);
      this.retained = false;
    }
    return this.buffer;
  }

  private deliver(chunk: Buffer): boolean {
    if (this.handler) return this.handler(chunk);
    this.early.push(Buffer.from(chunk));
    return false;
  }
}
