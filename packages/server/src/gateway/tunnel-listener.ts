import { createServer, type Server, type Socket } from 'node:net';
import { splice, type Logger, type SpliceChannel } from '@svc/platform';
import { aclAllows } from '../core/tunnels/acl.js';
import { ListenError, type ExpiryReason, type ListenSpec, type TunnelHandle } from '../core/tunnels/ports.js';
import type { TunnelTraffic } from './tunnel-traffic.js';

export interface TunnelListenerOptions {
  spec: ListenSpec;
  /** Opens the `forwarded-tcpip` channel for one accepted connection. */
  openChannel(source: { ip: string; port: number }): Promise<SpliceChannel>;
  /** The idle timeout or the auto-close time was reached; the owner closes the listener. */
  onExpired(reason: ExpiryReason): void;
  /** Counts the bytes of every connection. */
  traffic: TunnelTraffic;
  log: Logger;
}

/** setTimeout's limit (about 24.8 days); longer delays are chained. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Runs `fn` at `at` (epoch ms), however far away; returns the cancel function. */
function at(when: number, fn: () => void): () => void {
  let timer: NodeJS.Timeout;
  const arm = () => {
    const left = when - Date.now();
    timer = setTimeout(left > MAX_TIMER_MS ? arm : fn, Math.max(0, Math.min(left, MAX_TIMER_MS)));
    timer.unref();
  };
  arm();
  return () => clearTimeout(timer);
}

/** `::ffff:192.0.2.1` → `192.0.2.1`. */
const plainIp = (address: string): string => address.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, '$1');

function listenError(err: NodeJS.ErrnoException, host: string, port: number): ListenError {
  switch (err.code) {
    case 'EADDRINUSE':
      return new ListenError('in_use', `${host}:${port} is already in use`);
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
    case 'EINVAL':
      return new ListenError('bad_address', `${host} is not an address of this server (${err.code})`);
    case 'EMFILE':
    case 'ENFILE':
      return new ListenError(
        'failed',
        `cannot listen on ${host}:${port}: svcd is out of file descriptors (${err.code}); retry when fewer agents or tunnels are connected`,
      );
    default:
      return new ListenError('failed', `cannot listen on ${host}:${port}: ${err.message}`);
  }
}

/**
 * One tunnel's server port: accepts TCP connections, refuses peers outside the ACL at once, relays each other one
 * over its own SSH channel to the agent (half-close safe, with backpressure), counts them, and reports the idle
 * timeout (no open connection for that long) and the auto-close time.
 */
export class TunnelListener implements TunnelHandle {
  private readonly sockets = new Set<Socket>();
  private cancelIdle: (() => void) | undefined;
  /** When the running idle timer fires (epoch ms). */
  private idleAt: number | undefined;
  private readonly cancelAutoClose: (() => void) | undefined;
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly options: TunnelListenerOptions,
  ) {
    server.on('connection', (socket: Socket) => this.accept(socket));
    server.on('error', (err) => options.log.warn({ err }, 'tunnel listener error'));
    const { closeAt } = options.spec;
    if (closeAt !== undefined) this.cancelAutoClose = at(closeAt, () => this.expire('auto-close'));
    this.startIdle();
  }

  static async start(options: TunnelListenerOptions): Promise<TunnelListener> {
    const { host, port } = options.spec;
    // allowHalfOpen: a peer that ends its side still gets the reply; pauseOnConnect: nothing is read before the
    // channel is open.
    const server = createServer({ allowHalfOpen: true, pauseOnConnect: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port, exclusive: true }, () => {
        server.off('error', reject);
        resolve();
      });
    }).catch((err: unknown) => {
      throw listenError(err as NodeJS.ErrnoException, host, port);
    });
    const address = server.address();
    return new TunnelListener(server, typeof address === 'object' && address ? address.port : port, options);
  }

  get activeConnections(): number {
    return this.sockets.size;
  }

  get idleCloseAt(): number | undefined {
    return this.cancelIdle ? this.idleAt : undefined;
  }

  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.cancelIdle?.();
      this.cancelAutoClose?.();
      this.server.close(() => resolve());
      for (const socket of this.sockets) socket.destroy();
    });
    return this.closing;
  }

  private accept(socket: Socket): void {
    const { spec, log } = this.options;
    const ip = plainIp(socket.remoteAddress ?? '');
    if (this.closing || !ip) return void socket.destroy();
    if (spec.acl && !aclAllows(spec.acl, ip)) {
      log.info({ ip, acl: spec.acl.text }, 'tunnel connection refused: the address is not in the acl');
      return void socket.destroy();
    }
    this.sockets.add(socket);
    this.options.traffic.track(socket);
    this.cancelIdle?.();
    this.cancelIdle = undefined;
    socket.on('error', (err) => log.debug({ err, ip }, 'tunnel connection error'));
    socket.once('close', () => {
      this.sockets.delete(socket);
      if (this.sockets.size === 0) this.startIdle();
    });
    this.options.openChannel({ ip, port: socket.remotePort ?? 0 }).then(
      (channel) => {
        if (socket.destroyed) return channel.close();
        splice(socket, channel);
      },
      (err: unknown) => {
        log.info({ err, ip }, 'the client could not open a tunnel connection');
        socket.destroy();
      },
    );
  }

  private startIdle(): void {
    const { idleMs } = this.options.spec;
    if (idleMs === undefined || this.closing) return;
    this.idleAt = Date.now() + idleMs;
    this.cancelIdle = at(this.idleAt, () => this.expire('idle timeout'));
  }

  private expire(reason: ExpiryReason): void {
    if (!this.closing) this.options.onExpired(reason);
  }
}
