import { AppError } from '@svc/protocol';
import type { Clock } from '../auth/ports.js';
import type { ClientTunnel } from '../clients/client-record.js';
import { clientNotFound, type ClientObserver, type ClientRegistry } from '../clients/client-registry.js';
import type { ClientsLog } from '../clients/ports.js';
import type { UserRecord } from '../users/user-store.js';
import type { PortPool } from './port-pool.js';
import {
  ListenError,
  TunnelAgentError,
  type ExpiryReason,
  type TunnelAgent,
  type TunnelHandle,
  type TunnelTarget,
} from './ports.js';
import { duplicateKey, targetOf, tunnelView, type Tunnel } from './tunnel.js';
import { tunnelErrors as errors } from './tunnel-errors.js';
import { assertMayUseTunnels } from './tunnel-permission.js';
import type { TunnelRequest } from './tunnel-request.js';

export interface TunnelsSettings {
  /** `[server] used_ports` minus `excluded_ports`. */
  pool: PortPool;
  /** `[server] check_port_timeout`. */
  checkPortTimeoutMs: number;
  /** Length of a minute of `idle-timeout-minutes`; tests shorten it. */
  minuteMs: number;
  random?: () => number;
}

/** Free ports tried for one tunnel before giving up. */
const MAX_BIND_ATTEMPTS = 100;

interface ClientTunnels {
  nextId: number;
  tunnels: Map<string, Tunnel>;
}

/** A tunnel being opened: counts for duplicate and port checks before it exists. */
interface Pending {
  clientId: string;
  key: string;
  port: number | undefined;
}

/**
 * Tunnels on demand: opens them through the client's live connection, keeps their definitions while the client is
 * away and re-opens them when it returns (same server port when possible), closes them on request, when idle, at
 * their auto-close time, and at shutdown. Definitions live in this node's memory, like the connections they use.
 */
export class TunnelsService implements ClientObserver {
  private readonly clients = new Map<string, ClientTunnels>();
  private readonly pending = new Set<Pending>();
  private readonly closing = new Set<Promise<void>>();

  constructor(
    private readonly registry: ClientRegistry,
    private readonly settings: TunnelsSettings,
    private readonly clock: Clock,
    private readonly log: ClientsLog,
  ) {
    registry.observe(this);
  }

  async open(caller: UserRecord, clientId: string, request: TunnelRequest): Promise<ClientTunnel> {
    assertMayUseTunnels(caller);
    const agent = this.requireAgent(clientId);
    const state = this.stateOf(clientId);
    const key = duplicateKey(request);
    const { remote, local } = request;
    if (
      [...state.tunnels.values()].some((t) => duplicateKey(t.request) === key) ||
      [...this.pending].some((p) => p.clientId === clientId && p.key === key)
    ) {
      throw errors.exists(remote);
    }
    if (local) this.checkLocalPort(local.port);
    const pending: Pending = { clientId, key, port: local?.port };
    this.pending.add(pending);
    try {
      await this.checkTarget(clientId, agent, request);
      // Ids are never reused within a client, so a failed attempt leaves a gap.
      const tunnel: Tunnel = {
        id: String(state.nextId++),
        request,
        lhost: local?.host ?? '0.0.0.0',
        lport: local?.port ?? 0,
        lportRandom: !local,
        createdAt: this.clock.now(),
        closeAt:
          request.autoCloseMs === undefined ? undefined : this.clock.now().getTime() + request.autoCloseMs,
      };
      const handle = await this.establish(clientId, agent, tunnel);
      if (this.agentOf(clientId) !== agent) {
        await handle.close();
        throw errors.gone(clientId);
      }
      tunnel.lport = handle.port;
      tunnel.open = { agent, handle };
      state.tunnels.set(tunnel.id, tunnel);
      this.publish(clientId);
      this.log.info({ client_id: clientId, tunnel: tunnelView(tunnel) }, 'tunnel opened');
      return tunnelView(tunnel);
    } finally {
      this.pending.delete(pending);
    }
  }

  async delete(caller: UserRecord, clientId: string, tunnelId: string, force: boolean): Promise<void> {
    assertMayUseTunnels(caller);
    if (!this.registry.get(clientId)) throw clientNotFound(clientId);
    const state = this.clients.get(clientId);
    const tunnel = state?.tunnels.get(tunnelId);
    if (!state || !tunnel) throw errors.notFound(clientId, tunnelId);
    const active = tunnel.open?.handle.activeConnections ?? 0;
    if (active > 0 && !force) throw errors.busy(tunnelId, active);
    state.tunnels.delete(tunnelId);
    this.publish(clientId);
    this.log.info({ client_id: clientId, tunnel_id: tunnelId, force }, 'tunnel deleted');
    await this.close(tunnel, true);
  }

  /** The open tunnels of a client (for tests and diagnostics). */
  handles(clientId: string): { id: string; handle: TunnelHandle }[] {
    const tunnels = [...(this.clients.get(clientId)?.tunnels.values() ?? [])];
    return tunnels.flatMap((t) => (t.open ? [{ id: t.id, handle: t.open.handle }] : []));
  }

  attached(id: string): void {
    const state = this.clients.get(id);
    // After the hello reply has gone out: the agent is told about its tunnels once it knows it is connected.
    if (state && state.tunnels.size > 0) setTimeout(() => void this.reopen(id, state), 0);
  }

  detached(id: string): void {
    for (const tunnel of this.clients.get(id)?.tunnels.values() ?? []) void this.close(tunnel, false);
  }

  removed(id: string): void {
    this.detached(id);
    this.clients.delete(id);
  }

  /** Shutdown: closes every listener (the definitions go with the process). */
  async closeAll(): Promise<void> {
    for (const state of this.clients.values())
      for (const tunnel of state.tunnels.values()) void this.close(tunnel, false);
    await Promise.all([...this.closing]);
  }

  private stateOf(clientId: string): ClientTunnels {
    let state = this.clients.get(clientId);
    if (!state) this.clients.set(clientId, (state = { nextId: 1, tunnels: new Map() }));
    return state;
  }

  private agentOf(clientId: string): TunnelAgent | undefined {
    return this.registry.connection(clientId)?.tunnels;
  }

  private requireAgent(clientId: string): TunnelAgent {
    if (!this.registry.get(clientId)) throw clientNotFound(clientId);
    const agent = this.agentOf(clientId);
    if (!agent) throw errors.notConnected(clientId);
    return agent;
  }

  /** Ports of open tunnels (any client) and of tunnels being opened with an explicit port. */
  private takenPorts(): Set<number> {
    const taken = new Set<number>();
    for (const state of this.clients.values())
      for (const tunnel of state.tunnels.values()) if (tunnel.open) taken.add(tunnel.open.handle.port);
    for (const pending of this.pending) if (pending.port !== undefined) taken.add(pending.port);
    return taken;
  }

  private checkLocalPort(port: number): void {
    if (!this.settings.pool.has(port)) throw errors.portNotAllowed(port, this.settings.pool);
    if (this.takenPorts().has(port)) throw errors.portInUse(port);
  }

  /** tunnel_allowed on the client, then (unless check_port=false) whether the target accepts connections. */
  private async checkTarget(clientId: string, agent: TunnelAgent, request: TunnelRequest): Promise<void> {
    try {
      if (!(await agent.allowed(request.remote))) throw new TunnelAgentError('not_allowed', 'refused');
      if (!request.checkPort) return;
      const check = await agent.checkPort(request.remote, this.settings.checkPortTimeoutMs);
      if (!check.open) throw errors.remotePortClosed(request.remote, check.error);
    } catch (err) {
      throw this.agentFailure(clientId, agent, request.remote, err);
    }
  }

  private agentFailure(clientId: string, agent: TunnelAgent, target: TunnelTarget, err: unknown): unknown {
    if (err instanceof AppError) return err;
    if (err instanceof TunnelAgentError && err.reason === 'not_allowed') return errors.notAllowed(target);
    if (this.agentOf(clientId) !== agent || (err instanceof TunnelAgentError && err.reason === 'gone'))
      return errors.gone(clientId);
    return errors.agentFailed(err instanceof Error ? err.message : String(err));
  }

  /** Has the agent relay the target, then listens; undoes the first when the second fails. */
  private async establish(clientId: string, agent: TunnelAgent, tunnel: Tunnel): Promise<TunnelHandle> {
    try {
      await agent.forward(targetOf(tunnel));
    } catch (err) {
      throw this.agentFailure(clientId, agent, targetOf(tunnel), err);
    }
    try {
      return await this.listen(clientId, agent, tunnel);
    } catch (err) {
      agent.unforward(targetOf(tunnel)).catch(() => undefined);
      throw err;
    }
  }

  private async listen(clientId: string, agent: TunnelAgent, tunnel: Tunnel): Promise<TunnelHandle> {
    const { request } = tunnel;
    const { pool, minuteMs } = this.settings;
    const ports = tunnel.lportRandom
      ? pool.candidates(this.takenPorts(), this.settings.random)
      : [tunnel.lport][Symbol.iterator]();
    const preferred = tunnel.lportRandom && tunnel.lport !== 0 ? [tunnel.lport] : [];
    let attempts = 0;
    for (const port of [...preferred, ...iterate(ports, MAX_BIND_ATTEMPTS)]) {
      attempts += 1;
      try {
        return await agent.listen(
          {
            host: tunnel.lhost,
            port,
            acl: request.acl,
            idleMs: request.idleTimeoutMinutes === 0 ? undefined : request.idleTimeoutMinutes * minuteMs,
            closeAt: tunnel.closeAt,
            target: request.remote,
            clientId,
            tunnelId: tunnel.id,
          },
          (reason) => this.expired(clientId, tunnel, reason),
        );
      } catch (err) {
        if (!(err instanceof ListenError)) throw err;
        if (err.reason === 'in_use' && tunnel.lportRandom) continue;
        if (err.reason === 'in_use') throw errors.portInUse(port);
        if (err.reason === 'bad_address') throw errors.badLocalHost(tunnel.lhost, err.message);
        throw errors.listenFailed(err.message);
      }
    }
    throw errors.noFreePort(pool, attempts);
  }

  private async reopen(clientId: string, state: ClientTunnels): Promise<void> {
    const agent = this.agentOf(clientId);
    if (!agent) return;
    // A reconnect that replaced the old connection before it was noticed dead: its listeners go first.
    for (const tunnel of state.tunnels.values())
      if (tunnel.open?.agent !== agent) await this.close(tunnel, false);
    for (const tunnel of [...state.tunnels.values()]) {
      if (this.agentOf(clientId) !== agent) return;
      if (tunnel.open || state.tunnels.get(tunnel.id) !== tunnel) continue;
      if (tunnel.closeAt !== undefined && tunnel.closeAt <= this.clock.now().getTime()) {
        state.tunnels.delete(tunnel.id);
        this.log.info(
          { client_id: clientId, tunnel_id: tunnel.id },
          'tunnel auto-closed while the client was away',
        );
        continue;
      }
      try {
        const handle = await this.establish(clientId, agent, tunnel);
        if (this.agentOf(clientId) !== agent || state.tunnels.get(tunnel.id) !== tunnel) {
          await handle.close();
          continue;
        }
        const moved = handle.port !== tunnel.lport;
        tunnel.lport = handle.port;
        tunnel.open = { agent, handle };
        this.log.info(
          { client_id: clientId, tunnel: tunnelView(tunnel), ...(moved ? { moved: true } : {}) },
          moved ? 'tunnel re-opened on another local port (the old one is taken)' : 'tunnel re-opened',
        );
      } catch (err) {
        if (this.agentOf(clientId) !== agent) return;
        state.tunnels.delete(tunnel.id);
        const reason = err instanceof AppError ? `${err.message}: ${err.detail}` : String(err);
        this.log.warn(
          { client_id: clientId, tunnel: tunnelView(tunnel), reason },
          'tunnel could not be re-opened after the client reconnected; removed',
        );
      }
    }
    this.publish(clientId);
  }

  private expired(clientId: string, tunnel: Tunnel, reason: ExpiryReason): void {
    const state = this.clients.get(clientId);
    if (state?.tunnels.get(tunnel.id) !== tunnel) return;
    state.tunnels.delete(tunnel.id);
    this.publish(clientId);
    this.log.info({ client_id: clientId, tunnel_id: tunnel.id, reason }, `tunnel closed: ${reason}`);
    void this.close(tunnel, true);
  }

  /** Stops the listener; `unforward` also tells the agent (not needed when its connection is gone). */
  private close(tunnel: Tunnel, unforward: boolean): Promise<void> {
    const open = tunnel.open;
    if (!open) return Promise.resolve();
    tunnel.open = undefined;
    if (unforward) open.agent.unforward(targetOf(tunnel)).catch(() => undefined);
    const closing = open.handle.close().catch((err: unknown) => {
      this.log.warn({ err, tunnel_id: tunnel.id }, 'closing a tunnel listener failed');
    });
    this.closing.add(closing);
    void closing.finally(() => this.closing.delete(closing));
    return closing;
  }

  private publish(clientId: string): void {
    const tunnels = [...(this.clients.get(clientId)?.tunnels.values() ?? [])].filter((t) => t.open);
    tunnels.sort((a, b) => Number(a.id) - Number(b.id));
    this.registry.setTunnels(clientId, tunnels.map(tunnelView));
  }
}

function* iterate(ports: Iterator<number>, limit: number): Generator<number> {
  for (let i = 0; i < limit; i++) {
    const next = ports.next();
    if (next.done) return;
    yield next.value;
  }
}
