import type { Connection, TcpipBindInfo } from 'ssh2';
import { CONTROL_ERRORS } from '@svc/protocol';
import { ControlError, type ControlPeer, type Logger, type SpliceChannel } from '@svc/platform';
import {
  TunnelAgentError,
  type ExpiryReason,
  type ListenSpec,
  type TunnelAgent,
  type TunnelHandle,
  type TunnelTarget,
} from '../core/tunnels/ports.js';
import { TunnelListener } from './tunnel-listener.js';
import type { TunnelTraffic } from './tunnel-traffic.js';

/** Time the agent's reply may take beyond the port check's own timeout. */
const CHECK_PORT_MARGIN_MS = 5000;

const keyOf = (host: string, port: number): string => `${host}:${port}`;

/**
 * The tunnels of one agent connection: control requests to the agent, its `tcpip-forward` registrations
 * (accepted only for a target whose tunnel.open is in flight), and the listeners whose connections become
 * `forwarded-tcpip` channels on this connection.
 */
export class AgentTunnels implements TunnelAgent {
  private readonly opening = new Map<string, number>();

  constructor(
    private readonly ssh: Connection,
    private readonly peer: () => ControlPeer | undefined,
    private readonly traffic: TunnelTraffic,
    private readonly log: Logger,
  ) {
    ssh.on(
      'request',
      (
        accept: ((port?: number) => void) | undefined,
        reject: (() => void) | undefined,
        name: string,
        info: TcpipBindInfo,
      ) => {
        if (name === 'cancel-tcpip-forward') return accept?.();
        if (name === 'tcpip-forward' && this.opening.has(keyOf(info.bindAddr, info.bindPort)))
          return accept?.();
        log.warn({ request: name, bind: info }, 'agent global request refused');
        reject?.();
      },
    );
  }

  async allowed(target: TunnelTarget): Promise<boolean> {
    return (await this.ask((peer) => peer.request('tunnel.allowed', target))).allowed;
  }

  checkPort(target: TunnelTarget, timeoutMs: number): Promise<{ open: boolean; error?: string }> {
    return this.ask((peer) =>
      peer.request(
        'tunnel.check_port',
        { ...target, timeout_ms: timeoutMs },
        timeoutMs + CHECK_PORT_MARGIN_MS,
      ),
    );
  }

  async forward(target: TunnelTarget): Promise<void> {
    const key = keyOf(target.host, target.port);
    this.opening.set(key, (this.opening.get(key) ?? 0) + 1);
    try {
      await this.ask((peer) => peer.request('tunnel.open', target));
    } finally {
      const left = (this.opening.get(key) ?? 1) - 1;
      if (left > 0) this.opening.set(key, left);
      else this.opening.delete(key);
    }
  }

  async unforward(target: TunnelTarget): Promise<void> {
    await this.ask((peer) => peer.request('tunnel.close', target));
  }

  listen(spec: ListenSpec, onExpired: (reason: ExpiryReason) => void): Promise<TunnelHandle> {
    return TunnelListener.start({
      spec,
      onExpired,
      traffic: this.traffic,
      openChannel: (source) => this.openChannel(spec.target, source),
      log: this.log.child({ client_id: spec.clientId, tunnel_id: spec.tunnelId }),
    });
  }

  private openChannel(target: TunnelTarget, source: { ip: string; port: number }): Promise<SpliceChannel> {
    return new Promise((resolve, reject) => {
      try {
        this.ssh.forwardOut(target.host, target.port, source.ip, source.port, (err, channel) =>
          err ? reject(err) : resolve(channel),
        );
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  private async ask<T>(send: (peer: ControlPeer) => Promise<T>): Promise<T> {
    const peer = this.peer();
    if (!peer || peer.isClosed) throw new TunnelAgentError('gone', 'the client is not connected');
    try {
      return await send(peer);
    } catch (err) {
      if (err instanceof ControlError)
        throw new TunnelAgentError(
          err.code === CONTROL_ERRORS.notAllowed ? 'not_allowed' : 'failed',
          err.message,
        );
      const message = err instanceof Error ? err.message : String(err);
      throw new TunnelAgentError(peer.isClosed ? 'gone' : 'failed', message);
    }
  }
}
