import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ClientInfo, Connection, Server } from 'ssh2';
import { ssh2 } from '@svc/platform/ssh2';
import { hostKeyFromPem } from '@svc/platform/ssh2-host-key';
import { AgentConnection, keepaliveSlackMs, type AgentConnectionDeps } from './agent-connection.js';
import type { RemoteAddress } from './client-listener.js';
import type { HandshakeTicket } from './handshake-admission.js';
import type { HandshakeLimiter } from './handshake-limiter.js';
import { HandshakeSlot } from './handshake-slot.js';
import { SHUTDOWN_GRACE_MS } from './live-connections.js';

interface Pending {
  stream: Duplex;
  remote: RemoteAddress;
  /** Ends the handshake phase: frees the limiter slot and the admission ticket, stops the handshake timer. */
  finish: (loggedIn: boolean) => void;
}

export interface SshGatewayOptions extends AgentConnectionDeps {
  /** SEC1 PEM of the host key. */
  hostKeyPem: string;
  /** Time from the WebSocket upgrade to a successful login. */
  handshakeTimeoutMs: number;
  /** A handshake whose agent sends nothing for this long gives its limiter slot back (see HandshakeSlot). */
  handshakeStallMs: number;
  /** Where a handshake that gave its slot back gets one again. */
  limiter: HandshakeLimiter;
}

const keyOf = (remote: RemoteAddress): string => `${remote.ip}|${remote.port}`;

/**
 * The SSH side of the agent link: one ssh2 Server that agent streams are injected into. ssh2 names a new
 * connection only by the socket's remote address, so each stream carries its peer's address (unique among open
 * TCP connections to this listener) and that is how the connection finds its stream again.
 */
export class SshGateway {
  private readonly server: Server;
  private readonly pending = new Map<string, Pending>();
  private readonly connections = new Set<AgentConnection>();
  private readonly whenClosed = new WeakMap<AgentConnection, () => void>();

  constructor(private readonly options: SshGatewayOptions) {
    this.server = new ssh2.Server(
      {
        hostKeys: [{ key: hostKeyFromPem(options.hostKeyPem) }],
        ident: 'svcd',
        // SSH-level keepalive as a safety net under the control channel's pings, after the same silence as svcd's
        // own ping (an interval and its slack): shorter, it would drop a silent agent before that ping's answer
        // is due, and ping agents whose own pings come every interval.
        keepaliveInterval:
          options.settings.keepaliveIntervalMs + keepaliveSlackMs(options.settings.keepaliveIntervalMs),
        keepaliveCountMax: 2,
      },
      (ssh, info) => this.connected(ssh, info),
    );
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /** Takes an admitted agent stream; false when it cannot be told apart from one in progress. */
  accept(stream: Duplex, remote: RemoteAddress, release: () => void, ticket: HandshakeTicket): boolean {
    const key = keyOf(remote);
    if (this.pending.has(key)) return false;
    const timer = setTimeout(() => {
      this.options.log.info({ ip: remote.ip }, 'agent handshake timed out');
      this.options.refusals.add('handshake_timeout');
      stream.destroy();
    }, this.options.handshakeTimeoutMs);
    timer.unref();
    let slot: HandshakeSlot | undefined;
    let finished = false;
    const finish = (loggedIn: boolean) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      slot?.finish();
      ticket.end(loggedIn);
      // Let go of this closure (timer, key) once the handshake is over: connections live for months.
      stream.off('close', closedEarly);
      if (this.pending.get(key)?.stream === stream) this.pending.delete(key);
      if (!slot) release();
    };
    const closedEarly = () => finish(false);
    this.pending.set(key, { stream, remote, finish });
    stream.once('close', closedEarly);
    Object.assign(stream, { remoteAddress: remote.ip, remotePort: remote.port });
    this.server.injectSocket(stream as Socket);
    // Watching only now: a 'data' listener makes the stream flow, which must not start before ssh2 listens.
    if (!finished) {
      const reacquire = (signal: AbortSignal) => this.options.limiter.acquire(signal, '', true);
      slot = new HandshakeSlot(stream, release, reacquire, this.options.handshakeStallMs);
    }
    return true;
  }

  /** Closes every agent connection politely; resolves when they are gone (each is cut after SHUTDOWN_GRACE_MS). */
  async closeAll(reason: string): Promise<void> {
    for (const pending of this.pending.values()) pending.stream.destroy();
    await Promise.all(
      [...this.connections].map(
        (connection) =>
          new Promise<void>((resolve) => {
            this.whenClosed.set(connection, resolve);
            connection.close(reason, SHUTDOWN_GRACE_MS);
          }),
      ),
    );
  }

  private connected(ssh: Connection, info: ClientInfo): void {
    const pending = this.pending.get(keyOf({ ip: info.ip, port: info.port }));
    if (!pending) {
      ssh.end();
      return;
    }
    this.pending.delete(keyOf(pending.remote));
    const connection = new AgentConnection(ssh, pending.stream, pending.remote, this.options, (c) => {
      this.connections.delete(c);
      this.whenClosed.get(c)?.();
    });
    ssh.once('ready', () => pending.finish(true));
    this.connections.add(connection);
  }
}
