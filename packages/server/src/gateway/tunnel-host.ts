import { AppError } from '@svc/protocol';
import type { Clock } from '../core/auth/ports.js';
import { BatchedMembership, CONNECTING_CLIENTS } from '../core/batched-membership.js';
import { clientNotFound, type ClientDirectory } from '../core/clients/client-directory.js';
import type { ClientEvents } from '../core/clients/client-events.js';
import type { ClientTunnel } from '../core/clients/client-record.js';
import type { HostedTunnel } from '../core/dispatch.js';
import { KeyedQueue } from '../core/clients/keyed-queue.js';
import type { ClientsLog } from '../core/clients/ports.js';
import type { PortPool } from '../core/tunnels/port-pool.js';
import {
  ListenError,
  TunnelAgentError,
  type ExpiryReason,
  type StoredPort,
  type TunnelAgent,
  type TunnelHandle,
  type TunnelRepository,
  type TunnelTarget,
} from '../core/tunnels/ports.js';
import { fromStored, toStored } from '../core/tunnels/stored-tunnel.js';
import { duplicateKey, targetOf, tunnelView, type Tunnel } from '../core/tunnels/tunnel.js';
import { tunnelErrors as errors } from '../core/tunnels/tunnel-errors.js';
import type { TunnelRequest } from '../core/tunnels/tunnel-request.js';
import type { LiveConnections } from './live-connections.js';

export interface TunnelsSettings {
  /** `[server] used_ports` minus `excluded_ports`. */
  pool: PortPool;
  /** `[server] check_port_timeout`. */
  checkPortTimeoutMs: number;
  /** Length of a minute of `idle-timeout-minutes`; tests shorten it. */
  minuteMs: number;
  /**
   * The host of `tunnel_url` for tunnels listening on every interface: a cluster node's `advertise_address`, else
   * the host of the first `[server] url`.
   */
  publicHost?: string | undefined;
  random?: () => number;
}

/** Free ports tried for one tunnel before giving up. */
const MAX_BIND_ATTEMPTS = 100;

/** The tunnels of a client connected to this node. */
interface ClientTunnels {
  /** The connection they are opened through. */
  agent: TunnelAgent;
  /** Every stored definition of the client, open or not. */
  tunnels: Map<string, Tunnel>;
  /** Settles once the stored definitions are in `tunnels`; rejects when they could not be read. */
  loaded: Promise<void>;
}

/** A tunnel being opened: counts for duplicate and port checks before it exists. */
interface Pending {
  clientId: string;
  key: string;
  port: number | undefined;
}

const reasonOf = (err: unknown): string =>
  err instanceof AppError
    ? `${err.message}: ${err.detail}`
    : err instanceof Error
      ? err.message
      : String(err);

/**
 * The tunnels of the clients this node holds (AgentDispatch's openTunnel and closeTunnel land here). Definitions
 * are stored (the truth for which tunnels should exist); this node opens them through the client's live
 * connection and listens for them, re-creates them when the client connects (also after a restart of svcd, or
 * on another cluster node when the client moves there), on the same server port when it is free, and closes
 * them on request, when idle, at their auto-close time, and at shutdown (which keeps the definitions). Stored
 * definitions are deleted by DELETE, the idle timeout, the auto-close time, and with their client.
 */
export class TunnelHost {
  private readonly clients = new Map<string, ClientTunnels>();
  /** Highest id this process handed out per client, so a deleted tunnel's id is not handed out again soon. */
  private readonly lastIds = new Map<string, number>();
  private readonly pending = new Set<Pending>();
  private readonly closing = new Set<Promise<void>>();
  /** Storage operations per client, in order. */
  private readonly writes = new KeyedQueue();

  private readonly anyStored: BatchedMembership;

  constructor(
    private readonly directory: ClientDirectory,
    private readonly connections: Pick<LiveConnections, 'get'>,
    events: ClientEvents,
    private readonly repository: TunnelRepository,
    private readonly settings: TunnelsSettings,
    private readonly clock: Clock,
    private readonly log: ClientsLog,
  ) {
    this.anyStored = new BatchedMembership((ids) => repository.clientsWithTunnels(ids), CONNECTING_CLIENTS);
    events.subscribe('attached', ({ clientId }) => this.attached(clientId));
    events.subscribe('detached', ({ clientId }) => this.detached(clientId));
    events.subscribe('removed', ({ clientId }) => this.removed(clientId));
  }

  /**
   * Opens a tunnel and stores its definition; `owner` is the creator's username, `apiHost` the host name the
   * creator reached the API by. The caller has checked that the user may use tunnels.
   */
  async open(
    clientId: string,
    request: TunnelRequest,
    owner: string,
    apiHost: string,
  ): Promise<ClientTunnel> {
    const agent = this.requireAgent(clientId);
    const state = await this.loadedState(clientId, agent);
    const key = duplicateKey(request);
    const { remote, local } = request;
    const existing = [...state.tunnels.values()].find((t) => duplicateKey(t.request) === key);
    if (existing || [...this.pending].some((p) => p.clientId === clientId && p.key === key)) {
      throw errors.exists(remote, existing?.id);
    }
    if (local) this.checkLocalPort(local.port);
    const pending: Pending = { clientId, key, port: local?.port };
    this.pending.add(pending);
    try {
      const holder = local && (await this.keptPorts(clientId, undefined)).get(local.port);
      if (local && holder) throw errors.portKept(local.port, holder);
      await this.checkTarget(clientId, agent, request);
      const now = this.clock.now();
      const tunnel: Tunnel = {
        id: this.nextId(clientId),
        request,
        lhost: local?.host ?? '0.0.0.0',
        lport: local?.port ?? 0,
        lportRandom: !local,
        createdAt: now,
        closeAt: request.autoCloseMs === undefined ? undefined : now.getTime() + request.autoCloseMs,
        owner,
        apiHost,
      };
      const handle = await this.establish(clientId, agent, tunnel);
      if (!this.isCurrent(clientId, state)) {
        await handle.close();
        throw errors.gone(clientId);
      }
      tunnel.lport = handle.port;
      try {
        await this.writes.run(clientId, () => this.repository.insert(toStored(clientId, tunnel)));
      } catch (err) {
        agent.unforward(targetOf(tunnel)).catch(() => undefined);
        await handle.close();
        throw err;
      }
      if (!this.isCurrent(clientId, state)) {
        // The client went away while the definition was stored: it is re-created when the client is back.
        await handle.close();
        return this.view(tunnel);
      }
      tunnel.open = { agent, handle };
      state.tunnels.set(tunnel.id, tunnel);
      this.publish(clientId);
      this.log.info({ client_id: clientId, tunnel: this.view(tunnel) }, 'tunnel opened');
      return this.view(tunnel);
    } finally {
      this.pending.delete(pending);
    }
  }

  /** Deletes a tunnel, open or stored (also of a client that is away). */
  async delete(clientId: string, tunnelId: string, force: boolean): Promise<void> {
    if (!this.directory.get(clientId)) throw clientNotFound(clientId);
    if (!/^[1-9]\d{0,14}$/.test(tunnelId)) throw errors.notFound(clientId, tunnelId);
    const state = this.clients.get(clientId);
    await state?.loaded.catch(() => undefined);
    const active = state?.tunnels.get(tunnelId)?.open?.handle.activeConnections ?? 0;
    if (active > 0 && !force) throw errors.busy(tunnelId, active);
    const deleted = await this.writes.run(clientId, () => this.repository.delete(clientId, Number(tunnelId)));
    // It may have expired meanwhile.
    const tunnel = state?.tunnels.get(tunnelId);
    if (!deleted && !tunnel) throw errors.notFound(clientId, tunnelId);
    if (state && tunnel) {
      state.tunnels.delete(tunnelId);
      this.publish(clientId);
      await this.close(tunnel, true);
    }
    this.log.info({ client_id: clientId, tunnel_id: tunnelId, force }, 'tunnel deleted');
  }

  /** The open tunnels of a client (for tests and diagnostics). */
  handles(clientId: string): { id: string; handle: TunnelHandle }[] {
    const tunnels = [...(this.clients.get(clientId)?.tunnels.values() ?? [])];
    return tunnels.flatMap((t) => (t.open ? [{ id: t.id, handle: t.open.handle }] : []));
  }

  /**
   * Every tunnel of the clients this node holds, open or waiting to be re-opened, with its owner and timers
   * (GET /tunnels; the client's name is the directory's to add).
   */
  hosted(): HostedTunnel[] {
    const items: HostedTunnel[] = [];
    for (const [clientId, state] of this.clients) {
      for (const tunnel of state.tunnels.values()) {
        const handle = tunnel.open?.handle;
        const idleAt = handle?.idleCloseAt;
        items.push({
          ...this.view(tunnel),
          client_id: clientId,
          owner: tunnel.owner,
          open: handle !== undefined,
          active_connections: handle?.activeConnections ?? 0,
          idle_close_at: idleAt === undefined ? null : new Date(idleAt).toISOString(),
          close_at: tunnel.closeAt === undefined ? null : new Date(tunnel.closeAt).toISOString(),
        });
      }
    }
    return items;
  }

  /** Tunnels listening on this node now (monitoring; one pass over the connected clients). */
  openCount(): number {
    let count = 0;
    for (const state of this.clients.values())
      for (const tunnel of state.tunnels.values()) if (tunnel.open) count += 1;
    return count;
  }

  /** A client connected (on any node): re-opens its stored tunnels when this node holds it. */
  private attached(id: string): void {
    // A reconnect that replaced the old connection before it was noticed dead: its listeners go first.
    this.detached(id);
    const agent = this.agentOf(id);
    if (!agent) return;
    const state: ClientTunnels = { agent, tunnels: new Map(), loaded: Promise.resolve() };
    this.clients.set(id, state);
    this.load(id, state);
  }

  private detached(id: string): void {
    const state = this.clients.get(id);
    if (!state) return;
    this.clients.delete(id);
    for (const tunnel of state.tunnels.values()) void this.close(tunnel, false);
  }

  /** The client record was deleted; its stored tunnels went with it (see the client repository). */
  private removed(id: string): void {
    this.detached(id);
    this.lastIds.delete(id);
  }

  /** Shutdown: closes every listener and waits for pending storage operations; the definitions stay stored. */
  async closeAll(): Promise<void> {
    for (const id of [...this.clients.keys()]) this.detached(id);
    await Promise.all([...this.closing]);
    await this.writes.drain();
  }

  /** Reads the client's stored definitions, then re-creates them. */
  private load(clientId: string, state: ClientTunnels): void {
    state.loaded = this.writes
      .run(clientId, async () =>
        // Most clients have none: asked with the others connecting meanwhile before their rows are read.
        (await this.anyStored.has(clientId)) ? this.repository.listByClient(clientId) : [],
      )
      .then((rows) => {
        if (!this.isCurrent(clientId, state)) return;
        for (const row of rows) {
          try {
            state.tunnels.set(String(row.id), fromStored(row));
          } catch (err) {
            this.log.warn(
              { client_id: clientId, tunnel_id: row.id, reason: reasonOf(err) },
              'a stored tunnel does not parse and is left out; DELETE it to remove it',
            );
          }
          this.lastIds.set(clientId, Math.max(this.lastIds.get(clientId) ?? 0, row.id));
        }
      });
    state.loaded.then(
      // After the hello reply has gone out: the agent is told about its tunnels once it knows it is connected.
      () => setTimeout(() => void this.recreate(clientId, state), 0),
      (err: unknown) =>
        this.log.warn(
          { client_id: clientId, reason: reasonOf(err) },
          'stored tunnels could not be read; read again at the next tunnel request or reconnect',
        ),
    );
  }

  /** The client's tunnel state once its definitions are loaded (read again if that failed). */
  private async loadedState(clientId: string, agent: TunnelAgent): Promise<ClientTunnels> {
    const state = this.clients.get(clientId);
    if (!state || state.agent !== agent) throw errors.gone(clientId);
    try {
      await state.loaded;
    } catch {
      this.load(clientId, state);
      await state.loaded;
    }
    if (!this.isCurrent(clientId, state)) throw errors.gone(clientId);
    return state;
  }

  private isCurrent(clientId: string, state: ClientTunnels): boolean {
    return this.clients.get(clientId) === state && this.agentOf(clientId) === state.agent;
  }

  private nextId(clientId: string): string {
    const id = (this.lastIds.get(clientId) ?? 0) + 1;
    this.lastIds.set(clientId, id);
    return String(id);
  }

  private agentOf(clientId: string): TunnelAgent | undefined {
    return this.connections.get(clientId)?.tunnels;
  }

  private requireAgent(clientId: string): TunnelAgent {
    if (!this.directory.get(clientId)) throw clientNotFound(clientId);
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

  /** Ports of stored tunnels (every client, on any node) except `own`: each wants its port back. */
  private async keptPorts(clientId: string, own: string | undefined): Promise<Map<number, StoredPort>> {
    const rows = await this.repository.listPorts();
    const kept = new Map<number, StoredPort>();
    for (const row of rows) if (row.clientId !== clientId || String(row.id) !== own) kept.set(row.lport, row);
    return kept;
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

  /**
   * Listens on the tunnel's port. A pool-picked tunnel tries its last port first while this node's pool has it
   * (a cluster node re-opening another node's tunnel keeps to its own pool), then free pool ports that no stored
   * tunnel wants back (read only then: a reconnect storm re-opens on the old ports without a table scan).
   */
  private async listen(clientId: string, agent: TunnelAgent, tunnel: Tunnel): Promise<TunnelHandle> {
    if (!tunnel.lportRandom) {
      const handle = await this.bind(clientId, agent, tunnel, tunnel.lport);
      if (!handle) throw errors.portInUse(tunnel.lport);
      return handle;
    }
    let attempts = 0;
    if (tunnel.lport !== 0 && this.settings.pool.has(tunnel.lport)) {
      attempts += 1;
      const handle = await this.bind(clientId, agent, tunnel, tunnel.lport);
      if (handle) return handle;
    }
    const { pool, random } = this.settings;
    const avoid = new Set([...this.takenPorts(), ...(await this.keptPorts(clientId, tunnel.id)).keys()]);
    for (const port of iterate(pool.candidates(avoid, random), MAX_BIND_ATTEMPTS)) {
      attempts += 1;
      const handle = await this.bind(clientId, agent, tunnel, port);
      if (handle) return handle;
    }
    throw errors.noFreePort(pool, attempts);
  }

  /** Listens on one port; undefined when it is in use. */
  private async bind(
    clientId: string,
    agent: TunnelAgent,
    tunnel: Tunnel,
    port: number,
  ): Promise<TunnelHandle | undefined> {
    const { request } = tunnel;
    const { minuteMs } = this.settings;
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
      if (err.reason === 'in_use') return undefined;
      if (err.reason === 'bad_address') throw errors.badLocalHost(tunnel.lhost, err.message);
      throw errors.listenFailed(err.message);
    }
  }

  /**
   * Opens the loaded definitions through the client's new connection. The idle clock starts afresh (nobody
   * could use the tunnel while it was down); the auto-close time stays. A definition that cannot be opened
   * (its port is taken, the client refuses the target, ...) is kept and tried again at the next reconnect.
   */
  private async recreate(clientId: string, state: ClientTunnels): Promise<void> {
    const { agent } = state;
    // Listeners of the client's previous connection may still be closing; their ports are wanted back.
    await Promise.all([...this.closing]);
    for (const tunnel of [...state.tunnels.values()]) {
      if (!this.isCurrent(clientId, state)) return;
      if (tunnel.open || state.tunnels.get(tunnel.id) !== tunnel) continue;
      if (tunnel.closeAt !== undefined && tunnel.closeAt <= this.clock.now().getTime()) {
        state.tunnels.delete(tunnel.id);
        this.forget(clientId, tunnel);
        this.log.info(
          { client_id: clientId, tunnel_id: tunnel.id },
          'tunnel auto-closed while the client was away',
        );
        continue;
      }
      try {
        const handle = await this.establish(clientId, agent, tunnel);
        if (!this.isCurrent(clientId, state) || state.tunnels.get(tunnel.id) !== tunnel) {
          await handle.close();
          continue;
        }
        const moved = handle.port !== tunnel.lport;
        tunnel.lport = handle.port;
        tunnel.open = { agent, handle };
        if (moved) this.storePort(clientId, tunnel);
        this.log.info(
          { client_id: clientId, tunnel: this.view(tunnel), ...(moved ? { moved: true } : {}) },
          moved ? 'tunnel re-opened on another local port (the old one is taken)' : 'tunnel re-opened',
        );
      } catch (err) {
        if (!this.isCurrent(clientId, state)) return;
        this.log.warn(
          { client_id: clientId, tunnel: this.view(tunnel), reason: reasonOf(err) },
          'tunnel could not be re-opened after the client reconnected; kept, tried again at the next reconnect',
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
    this.forget(clientId, tunnel);
    this.log.info({ client_id: clientId, tunnel_id: tunnel.id, reason }, `tunnel closed: ${reason}`);
    void this.close(tunnel, true);
  }

  /** Deletes a stored definition in the background; when that fails it is re-created at the next reconnect. */
  private forget(clientId: string, tunnel: Tunnel): void {
    this.writes
      .run(clientId, () => this.repository.delete(clientId, Number(tunnel.id)))
      .catch((err: unknown) =>
        this.log.warn(
          { client_id: clientId, tunnel_id: tunnel.id, reason: reasonOf(err) },
          'deleting a stored tunnel failed',
        ),
      );
  }

  private storePort(clientId: string, tunnel: Tunnel): void {
    const port = tunnel.lport;
    this.writes
      .run(clientId, () => this.repository.updatePort(clientId, Number(tunnel.id), port))
      .catch((err: unknown) =>
        this.log.warn(
          { client_id: clientId, tunnel_id: tunnel.id, reason: reasonOf(err) },
          'storing the new port of a tunnel failed',
        ),
      );
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

  private view(tunnel: Tunnel): ClientTunnel {
    return tunnelView(tunnel, this.settings.publicHost);
  }

  /** Shows the open tunnels in the client record. */
  private publish(clientId: string): void {
    const tunnels = [...(this.clients.get(clientId)?.tunnels.values() ?? [])].filter((t) => t.open);
    tunnels.sort((a, b) => Number(a.id) - Number(b.id));
    this.directory.setTunnels(
      clientId,
      tunnels.map((t) => this.view(t)),
    );
  }
}

function* iterate(ports: Iterator<number>, limit: number): Generator<number> {
  for (let i = 0; i < limit; i++) {
    const next = ports.next();
    if (next.done) return;
    yield next.value;
  }
}
