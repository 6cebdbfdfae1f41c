import { hostname } from 'node:os';
import type { StatusData } from '@svc/protocol';
import type { NatsConnection } from 'nats';
import { credentialConnections, type ClientSeam, type ClientSeamDeps } from '../client-seam.js';
import type { ClientChangeFeed, ClientRepository } from '../core/clients/ports.js';
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
import { BusState } from './bus-state.js';
import { TakeOvers } from './take-over.js';

/** How long a node may take to answer a command sent over NATS. */
const DISPATCH_TIMEOUT_MS = 10_000;
/** The shortest time a refresh of the cluster clients may take before the next one starts anyway. */
const REFRESH_DEADLINE_MS = 10_000;
/** How often a node reads every client row again, besides the rows changed since its last reading. */
const FULL_READ_MS = 300_000;
/** How far back before its last reading a node reads changes again (writers' clocks, commits in flight). */
const READ_OVERLAP_MS = 10_000;

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
  /** The nodes whose presence has not expired. */
  liveNodes(): Promise<ReadonlySet<string>>;
  /** Called with the clients a node held when this node finds it gone (its presence expired). */
  onNodeLost(handler: (nodeId: string, clientIds: string[]) => void): void;
  close(): Promise<void>;
}

/** How old a reading of the nodes /status may show (it is asked many times a second by monitors). */
const STATUS_NODES_MAX_AGE_MS = 1_000;

type NodeStatus = NonNullable<StatusData['cluster']>['nodes'][number];

const nodeState = (info: NodeInfo, now: number, heartbeatMs: number): NodeStatus => ({
  node_id: info.node_id,
  advertise_address: info.advertise_address,
  started_at: info.started_at,
  seen_at: info.seen_at,
  state: now - Date.parse(info.seen_at) <= 2 * heartbeatMs ? 'live' : 'late',
});

/** The client seam's parts; the directory reads the changes of the clients table every heartbeat. */
export type ClusterSeamDeps = Omit<ClientSeamDeps, 'clients'> & {
  clients: ClientRepository & ClientChangeFeed;
};

/**
 * The seam of one node of a cluster: the database's changes read every heartbeat as the directory, presence in
 * NATS KV buckets, a dispatch that sends commands for other nodes' clients over NATS, and job events between nodes.
 */
export async function clusterSeam(
  deps: ClusterSeamDeps,
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
        clientsBucket: `${cluster.nats_prefix}_clients`,
      },
      deps.log,
    );
    const events = new ClusterClientEvents(nc, cluster.nats_prefix, nodeId, deps.log);
    events.start();
    const bus = new BusState(nc, deps.log, () => {
      presence
        .renew()
        .catch((err: unknown) => deps.log.warn({ err }, 'renewing the cluster presence failed'));
    });
    bus.watch();
    // After NATS comes back the other nodes need a heartbeat or two to put their keys again.
    const settled = () => bus.available && !bus.backWithin(3 * cluster.heartbeat_interval);
    const directory = new ClusterClientDirectory(deps.clients, events, nodeId, deps.clock, deps.log, {
      liveNodes: () => presence.liveNodeIds(),
      presenceSettled: settled,
      fullReadMs: Math.max(FULL_READ_MS, 60 * cluster.heartbeat_interval),
      overlapMs: Math.max(READ_OVERLAP_MS, 2 * cluster.heartbeat_interval),
    });
    const takeOvers: TakeOvers = new TakeOvers(
      nc,
      (): LiveConnections => connections,
      (clientId, owner) => directory.movedTo(clientId, owner),
      { nodeId, prefix: cluster.nats_prefix, limit: cluster.takeover_limit },
      deps.clock,
      deps.log,
    );
    const connections: LiveConnections = new LiveConnections(directory, deps.clock, (clientId) =>
      takeOvers.admit(clientId),
    );
    // A tunnel listens on the node holding its client (re-opened on the next one when the client moves there):
    // its tunnel_url names that node's advertised address, when it has one.
    const tunnelHost = new TunnelHost(
      directory,
      connections,
      events,
      deps.tunnels,
      { ...deps.tunnelSettings, publicHost: cluster.advertise_address || deps.tunnelSettings.publicHost },
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
        busAvailable: () => bus.available,
      },
      deps.log,
    );
    presence.start(events, takeOvers);
    // The client keys of a node that left count for nothing; one node (the first live one by id, or the node
    // itself at its restart) deletes them so that the bucket does not fill with them.
    const forgetKeys = (lost: string, clientIds: string[]) => {
      if (clientIds.length === 0) return;
      void (async () => {
        const [first] = [...(await presence.liveNodeIds())].sort();
        if (lost === nodeId || first === nodeId) await presence.forget(lost, clientIds);
      })().catch((err: unknown) =>
        deps.log.warn({ err, node: lost }, 'deleting the client keys of a node that left failed'),
      );
    };
    directory.onNodeLost = forgetKeys;
    dispatch.serve();
    takeOvers.serve();
    // A refresh whose NATS or database call never settles (the server went away mid-call) must not stop the next.
    let refreshing: Promise<void> | undefined;
    let refreshStarted = 0;
    const refreshDeadline = Math.max(REFRESH_DEADLINE_MS, 5 * cluster.heartbeat_interval);
    const refresh = setInterval(() => {
      if (!bus.available) return;
      if (refreshing && Date.now() - refreshStarted < refreshDeadline) return;
      if (refreshing)
        deps.log.warn({ ms: refreshDeadline }, 'reading the cluster clients did not finish: starting again');
      refreshStarted = Date.now();
      const current: Promise<void> = directory
        .refresh()
        .catch((err: unknown) => deps.log.warn({ err }, 'reading the cluster clients failed'))
        .finally(() => {
          if (refreshing === current) refreshing = undefined;
        });
      refreshing = current;
    }, cluster.heartbeat_interval);
    refresh.unref();
    let drainRequests: { unsubscribe(): void } | undefined;
    const node: ClusterNode = {
      nodeId,
      async status() {
        const now = deps.clock.now().getTime();
        // Without NATS: the nodes last seen, which turn `late`, and this node.
        const nodes = bus.available
          ? await presence.recentNodes(STATUS_NODES_MAX_AGE_MS)
          : [
              ...presence.lastNodes.filter((info) => info.node_id !== nodeId),
              { ...presence.self(), seen_at: new Date(now).toISOString() },
            ];
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
      liveNodes: () => presence.liveNodeIds(),
      onNodeLost(handler) {
        directory.onNodeLost = (lost, clientIds) => {
          forgetKeys(lost, clientIds);
          handler(lost, clientIds);
        };
      },
      async close() {
        drainRequests?.unsubscribe();
        clearInterval(refresh);
        dispatch.close();
        takeOvers.close();
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
