import type { Clock } from './core/auth/ports.js';
import type { ClientDirectory } from './core/clients/client-directory.js';
import type { ClientEvents } from './core/clients/client-events.js';
import { CachedClientDirectory } from './core/clients/cached-client-directory.js';
import { LocalClientEvents } from './core/clients/local-client-events.js';
import type { ClientRepository, ClientsLog } from './core/clients/ports.js';
import type { ClientConnections } from './core/clients-auth/client-auth-store.js';
import type { AgentDispatch } from './core/dispatch.js';
import type { TunnelRepository } from './core/tunnels/ports.js';
import { LiveConnections } from './gateway/live-connections.js';
import { LocalDispatch } from './gateway/local-dispatch.js';
import { TunnelHost, type TunnelsSettings } from './gateway/tunnel-host.js';

export interface ClientSeamDeps {
  /** This node's id (`[cluster] node_id` later); the owner node of the clients it holds. */
  nodeId: string;
  clients: ClientRepository;
  tunnels: TunnelRepository;
  tunnelSettings: TunnelsSettings;
  clock: Clock;
  log: ClientsLog;
}

/**
 * Where client state splits at the node boundary. Core sees `events`, `directory` and `dispatch`; the gateway
 * alone sees `connections` and `tunnelHost`. A cluster replaces the directory, the events and the dispatch with
 * adapters (packages/server/src/cluster/) here and nowhere else.
 */
export interface ClientSeam {
  /** Attached, detached, record changed, removed, job output and job finished. */
  events: ClientEvents;
  /** Every client record, with the owner node and connection epoch of the connected ones. */
  directory: ClientDirectory;
  /** The agent connections this node holds (gateway only). */
  connections: LiveConnections;
  /** The tunnels this node listens for (gateway only). */
  tunnelHost: TunnelHost;
  /** How core reaches an agent, whole commands. */
  dispatch: AgentDispatch;
  /** What removing a client credential needs: its connected clients, counted and disconnected. */
  credentials: ClientConnections;
}

/** The single-node seam: in-process events, the database with a cache as directory, local dispatch. */
export function singleNodeSeam(deps: ClientSeamDeps): ClientSeam {
  const events = new LocalClientEvents();
  const directory = new CachedClientDirectory(deps.clients, events, deps.nodeId, deps.clock, deps.log);
  const connections = new LiveConnections(directory, deps.clock);
  const tunnelHost = new TunnelHost(
    directory,
    connections,
    events,
    deps.tunnels,
    deps.tunnelSettings,
    deps.clock,
    deps.log,
  );
  const dispatch = new LocalDispatch(connections, tunnelHost);
  return {
    events,
    directory,
    connections,
    tunnelHost,
    dispatch,
    credentials: credentialConnections(directory, dispatch),
  };
}

/** ClientConnections over the directory (who is connected with it, anywhere) and the dispatch (close them). */
export const credentialConnections = (
  directory: Pick<ClientDirectory, 'countByCredential'>,
  dispatch: Pick<AgentDispatch, 'disconnectByCredential'>,
): ClientConnections => ({
  countByAuthId: (authId) => directory.countByCredential(authId),
  disconnectByAuthId: async (authId) => {
    await dispatch.disconnectByCredential(authId, 'its client credential was removed');
  },
});
