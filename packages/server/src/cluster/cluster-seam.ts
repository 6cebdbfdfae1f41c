import { hostname } from 'node:os';
import type { StatusData } from '@svc/protocol';
import type { NatsConnection } from 'nats';
import { credentialConnections, type ClientSeam, type ClientSeamDeps } from '../client-seam.js';
import type { SvcdConfig } from '../config/schema.js';
import { LiveConnections } from '../gateway/live-connections.js';
import { LocalDispatch } from '../gateway/local-dispatch.js';
import { TunnelHost } from '../gateway/tunnel-host.js';
import { ClusterClientDirectory } from './cluster-client-directory.js';
import { ClusterClientEvents } from './cluster-client-events.js';
import { connectNats } from './nats-connection.js';
import { NatsDispatch } from './nats-dispatch.js';
import { Presence, type NodeInfo } from './presence.js';
import { drainNode, type DrainOutcome } from './node-drain.js';
import { drainSubject, drainedSubject, type DrainAccepted } from './drain-request.js';
import { encodeJson } from './dispatch-wire.js';

/** How long a node may take to answer a command sent over NATS. */
const DISPATCH_TIMEOUT_MS = 10_000;

/** `[cluster] node_id`, else the host name with what a NATS subject token cannot hold replaced by -. */
export const clusterNodeId = (cluster: SvcdConfig['cluster']): string =>
  cluster.node_id ??
  hostname()
    .replace(/[^A-Za-z0-9_-]/g, '-')
    .slice(0, 64);

/** The cluster part of a running node: the nodes it sees, and how it leaves. */
export interface ClusterNode {
  nodeId: string;
  /** GET /status `cluster`: the nodes whose presence has not expired, with their state. */
  status(): Promise<NonNullable<StatusData['cluster']>>;
  /**
   * Rolling upgrade: stops taking agents (`stopAccepting`), asks this node's agents to reconnect elsewhere and
   * waits for them to move (at most `[cluster] drain_timeout`); tells a waiting `svcd drain` how it went.
   */
  drain(stopAccepting: () => void): Promise<DrainOutcome>;
  /** Calls `handler` when `svcd drain` asks this node to drain (it then stops as on SIGTERM). */
  onDrainRequest(handler: () => void): void;
  close(): Promise<void>;
}

type NodeStatus = NonNullable<StatusData['cluster']>['nodes'][number];

const nodeState = (info: NodeInfo, now: number, heartbeatMs: number): NodeStatus => ({
  ...info,
  state: now - Date.parse(info.seen_at) <= 2 * heartbeatMs ? 'live' : 'late',
});

/**
 * The seam of one node of a cluster: the database read again every heartbeat as the directory, presence in a
 * NATS KV bucket, a dispatch that sends commands for other nodes' clients over NATS, and job events between nodes.
 */
export async function clusterSeam(
  deps: ClientSeamDeps,
  cluster: SvcdConfig['cluster'],
): Promise<{ seam: ClientSeam; node: ClusterNode }> {
  const { nodeId } = deps;
  const nc: NatsConnection = await connectNats(cluster, nodeId);
  try {
    const presence = await Presence.open(
      nc,
      {
        nodeId,
        advertiseAddress: cluster.advertise_address,
        heartbeatMs: cluster.heartbeat_interval,
        bucket: `${cluster.nats_prefix}_presence`,
      },
      deps.log,
    );
    const events = new ClusterClientEvents(nc, cluster.nats_prefix, nodeId, deps.log);
    events.start();
    const directory = new ClusterClientDirectory(deps.clients, events, nodeId, deps.clock, deps.log, () =>
      presence.liveNodeIds(),
    );
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
    const local = new LocalDispatch(connections, tunnelHost);
    const dispatch = new NatsDispatch(
      nc,
      local,
      connections,
      presence,
      {
        nodeId,
        prefix: cluster.nats_prefix,
        timeoutMs: DISPATCH_TIMEOUT_MS,
        advertiseAddress: cluster.advertise_address,
      },
      deps.log,
    );
    presence.start(events);
    dispatch.serve();
    let refreshing = false;
    const refresh = setInterval(() => {
      if (refreshing) return;
      refreshing = true;
      directory
        .refresh()
        .catch((err: unknown) => deps.log.warn({ err }, 'reading the cluster clients failed'))
        .finally(() => (refreshing = false));
    }, cluster.heartbeat_interval);
    refresh.unref();
    let drainRequests: { unsubscribe(): void } | undefined;
    const node: ClusterNode = {
      nodeId,
      async status() {
        const now = deps.clock.now().getTime();
        const nodes = await presence.nodes();
        return {
          node_id: nodeId,
          nodes: nodes
            .map((info) => nodeState(info, now, cluster.heartbeat_interval))
            .sort((a, b) => a.node_id.localeCompare(b.node_id)),
        };
      },
      async drain(stopAccepting) {
        const outcome = await drainNode({
          nodeId,
          stopAccepting,
          connections,
          owner: (clientId) => presence.owner(clientId),
          timeoutMs: cluster.drain_timeout,
          log: deps.log,
        });
        nc.publish(drainedSubject(cluster.nats_prefix, nodeId), encodeJson(outcome));
        await nc.flush().catch(() => undefined);
        return outcome;
      },
      onDrainRequest(handler) {
        const subscription = nc.subscribe(drainSubject(cluster.nats_prefix, nodeId));
        drainRequests = subscription;
        void (async () => {
          for await (const message of subscription) {
            const accepted: DrainAccepted = { node_id: nodeId, clients: connections.size };
            message.respond(encodeJson(accepted));
            deps.log.info(accepted, 'svcd drain asked this node to drain');
            handler();
          }
        })();
      },
      async close() {
        drainRequests?.unsubscribe();
        clearInterval(refresh);
        dispatch.close();
        events.close();
        await presence.close().catch(() => undefined);
        await nc.drain().catch(() => undefined);
      },
    };
    return {
      seam: {
        events,
        directory,
        connections,
        tunnelHost,
        dispatch,
        credentials: credentialConnections(directory, dispatch),
      },
      node,
    };
  } catch (err) {
    await nc.close();
    throw err;
  }
}
