import { connect, type Socket } from 'node:net';
import type { Client, ClientChannel, TcpConnectionDetails } from 'ssh2';
import { ControlError, SocketReadBuffer, splice, type LineLogger as Logger } from '@svc/platform';
import { CONTROL_ERRORS } from '@svc/protocol';
import type { TunnelAllowList } from './tunnel-allowed.js';

/** Time to connect to a tunnel target before the connection is refused. */
const CONNECT_TIMEOUT_MS = 10_000;

const keyOf = (host: string, port: number): string => `${host}:${port}`;

/** What the control session asks of the tunnel side. */
export interface TunnelForwarder {
  open(host: string, port: number): Promise<void>;
  close(host: string, port: number): Promise<void>;
}

/**
 * The agent's side of tunnels. svcd's tunnel.open makes it register the target with svcd (`forwardIn`, a
 * `tcpip-forward` request), counted per target; svcd then opens one `forwarded-tcpip` channel per connection
 * to its tunnel port, and the agent connects to the target and splices. Only registered targets that
 * tunnel_allowed permits (checked again per connection) are ever dialled.
 */
export class Forwarder implements TunnelForwarder {
  private readonly targets = new Map<string, number>();

  constructor(
    private readonly ssh: Client,
    private readonly allowList: TunnelAllowList,
    private readonly log: Pick<Logger, 'debug' | 'info' | 'warn'>,
    /** Told the size of every chunk relayed, in either direction. */
    private readonly relayed: (bytes: number) => void = () => {},
  ) {
    ssh.on('tcp connection', (details, accept, reject) => void this.connection(details, accept, reject));
  }

  async open(host: string, port: number): Promise<void> {
    if (!(await this.allowList.allows(host, port))) {
      this.log.warn({ host, port }, 'svcd asked for a tunnel that tunnel_allowed does not permit');
      throw new ControlError(CONTROL_ERRORS.notAllowed, `${host}:${port} is not allowed by tunnel_allowed`);
    }
    const key = keyOf(host, port);
    const count = this.targets.get(key) ?? 0;
    if (count === 0) {
      await new Promise<void>((resolve, reject) => {
        this.ssh.forwardIn(host, port, (err) => (err ? reject(err) : resolve()));
      });
    }
    this.targets.set(key, (this.targets.get(key) ?? 0) + 1);
    this.log.info({ host, port }, 'tunnel target registered');
  }

  async close(host: string, port: number): Promise<void> {
    const key = keyOf(host, port);
    const count = this.targets.get(key) ?? 0;
    if (count === 0) return;
    if (count > 1) return void this.targets.set(key, count - 1);
    this.targets.delete(key);
    this.log.info({ host, port }, 'tunnel target released');
    await new Promise<void>((resolve) => {
      // The registration may already be gone with the connection; nothing is left to undo then.
      this.ssh.unforwardIn(host, port, () => resolve());
    }).catch(() => undefined);
  }

  private async connection(
    details: TcpConnectionDetails,
    accept: () => ClientChannel,
    reject: () => void,
  ): Promise<void> {
    const { destIP: host, destPort: port } = details;
    if (!this.targets.has(keyOf(host, port)) || !(await this.allowList.allows(host, port))) {
      this.log.warn({ host, port }, 'tunnel connection refused: the target is not registered or not allowed');
      return reject();
    }
    // Tunnel downloads start here: reads into one reused buffer, no new Buffer per read.
    const reads = new SocketReadBuffer();
    const socket: Socket = connect({
      host: host.replace(/^\[(.*)\]$/, '$1'),
      port,
      allowHalfOpen: true,
      onread: reads.onread,
    });
    let connected = false;
    socket.setTimeout(CONNECT_TIMEOUT_MS, () => socket.destroy(new Error('connect timeout')));
    socket.on('error', (err) => {
      if (connected) return this.log.debug({ err, host, port }, 'tunnel target connection error');
      this.log.info({ err, host, port }, 'tunnel target refused the connection');
      reject();
    });
    socket.once('connect', () => {
      connected = true;
      socket.setTimeout(0);
      splice(socket, accept(), reads, this.relayed);
    });
  }
}
