import type { Duplex } from 'node:stream';

/** A stream that can keep what its peer sends back until told (WebSocketStream). */
export type HoldableStream = Duplex & {
  holdInbound?(onHeld: () => void): void;
  releaseInbound?(): void;
};

/** Why a handshake's wait for a slot is called off: it is over. */
const HANDSHAKE_OVER = new Error('the handshake is over');

/**
 * One handshake's use of the limiter's slots, which bound the CPU that handshakes take. It holds its slot while its
 * agent keeps sending; once the agent has been quiet for `stallMs` (or right after its banner) it gives the slot
 * back, since waiting for a peer costs no CPU, and what the agent sends next waits for a slot again, ahead of
 * handshakes not yet started. So a peer that sends a banner and stalls holds a slot for a moment, not for the
 * whole handshake deadline.
 */
export class HandshakeSlot {
  private release: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private finished = false;
  private bannerSeen = false;
  private readonly abort = new AbortController();

  constructor(
    private readonly stream: HoldableStream,
    release: () => void,
    private readonly reacquire: (signal: AbortSignal) => Promise<() => void>,
    private readonly stallMs: number,
  ) {
    this.release = release;
    stream.on('data', this.progressed);
    this.arm();
  }

  /** The handshake is over (logged in or closed): the slot goes back and data flows freely. */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.timer);
    this.stream.off('data', this.progressed);
    // With a reason of our own: abort() without one builds a DOMException (a stack trace) per handshake.
    this.abort.abort(HANDSHAKE_OVER);
    this.giveBack();
    this.stream.releaseInbound?.();
  }

  private readonly progressed = (): void => {
    if (this.bannerSeen) {
      this.timer?.refresh();
      return;
    }
    // The agent's first message is its SSH banner; svcd answers with its own and its key exchange offer (cheap)
    // and then waits for the agent: the slot goes back at once, so a peer that stalls there holds it only briefly.
    this.bannerSeen = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    setImmediate(this.stalled);
  };

  private arm(): void {
    this.timer = setTimeout(this.stalled, this.stallMs);
    this.timer.unref();
  }

  private readonly stalled = (): void => {
    if (this.finished) return;
    this.timer = undefined;
    this.giveBack();
    this.stream.holdInbound?.(this.resume);
  };

  private readonly resume = (): void => {
    this.reacquire(this.abort.signal).then(
      (release) => {
        if (this.finished) return release();
        this.release = release;
        this.arm();
        this.stream.releaseInbound?.();
      },
      () => {
        if (!this.finished) this.stream.destroy();
      },
    );
  };

  private giveBack(): void {
    const release = this.release;
    this.release = undefined;
    release?.();
  }
}
