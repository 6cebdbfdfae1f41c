import type { Socket } from 'node:net';

/**
 * Groups many small writes to a socket into few syscalls: the first write corks the socket, which is uncorked
 * at the end of this turn of the event loop, or as soon as `maxBytes` are waiting, so that the process on the
 * other end can start on the first bytes while this one produces the rest.
 */
export class WriteBatcher {
  private corked: Socket | undefined;
  private queued = 0;
  private scheduled = false;

  constructor(private readonly maxBytes: number) {}

  /** Runs `write` (which writes `bytes` to `socket`) inside the current batch. */
  add(socket: Socket | undefined, bytes: number, write: () => void): void {
    if (socket && !this.corked) {
      socket.cork();
      this.corked = socket;
      this.scheduleFlush();
    }
    write();
    this.queued += bytes;
    if (this.queued >= this.maxBytes) this.flush();
  }

  flush(): void {
    const socket = this.corked;
    this.corked = undefined;
    this.queued = 0;
    socket?.uncork();
  }

  private scheduleFlush(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }
}
