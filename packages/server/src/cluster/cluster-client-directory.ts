import type { Clock } from '../core/auth/ports.js';
import { CachedClientDirectory } from '../core/clients/cached-client-directory.js';
import type { ClientEvents, ClientOwner } from '../core/clients/client-events.js';
import type { ClientRepository, ClientsLog, StoredClient } from '../core/clients/ports.js';
import { fromStored } from '../core/clients/stored-client.js';

/** What changes in a row when another node changes the client. */
const signature = (row: StoredClient): string =>
  JSON.stringify([row.connectionState, row.owner, row.disconnectedAt, row.details]);

/**
 * The client directory of one node of a cluster: the cache of CachedClientDirectory for the clients this node
 * holds (it writes their rows), and the database read again every heartbeat for the others. Start-up and every
 * refresh mark disconnected only the clients whose owner node is no longer live (presence), never those another
 * live node holds.
 */
export class ClusterClientDirectory extends CachedClientDirectory {
  private readonly seen = new Map<string, string>();
  private lastLive = new Set<string>();

  constructor(
    repository: ClientRepository,
    events: ClientEvents,
    nodeId: string,
    clock: Clock,
    log: ClientsLog,
    private readonly liveNodes: () => Promise<ReadonlySet<string>>,
    /** False while presence cannot be trusted (NATS just came back): nothing is marked disconnected then. */
    private readonly presenceSettled: () => boolean = () => true,
  ) {
    super(repository, events, nodeId, clock, log);
  }

  /** Told of the clients a node held when it left the cluster (their rows are marked disconnected). */
  onNodeLost: (nodeId: string, clientIds: string[]) => void = () => undefined;

  override async load(): Promise<void> {
    await this.refresh({ startUp: true });
    this.events.publish('recordsReloaded', {});
  }

  /**
   * Marks disconnected the clients of nodes gone silent and takes in what other nodes changed. At start-up the
   * clients stored as held by this node are stale too (this process holds nothing yet).
   */
  async refresh({ startUp = false } = {}): Promise<void> {
    const live = await this.liveNodes();
    const rows = await this.repository.loadAll();
    const now = this.clock.now().getTime();
    const stale = !this.presenceSettled()
      ? []
      : rows.filter(
          (row) =>
            row.connectionState === 'connected' &&
            !this.holdsHere(row.id) &&
            (!row.owner ||
              !live.has(row.owner.nodeId) ||
              (startUp ? row.owner.nodeId === this.nodeId : false)),
        );
    const byNode = new Map<string | undefined, string[]>();
    for (const row of stale) {
      const ids = byNode.get(row.owner?.nodeId) ?? [];
      ids.push(row.id);
      byNode.set(row.owner?.nodeId, ids);
    }
    // Nodes gone since the last refresh that held no clients may still have coordinated runs.
    if (this.presenceSettled())
      for (const node of this.lastLive)
        if (!live.has(node) && !byNode.has(node) && node !== this.nodeId) byNode.set(node, []);
    this.lastLive = new Set(live);
    for (const [node, ids] of byNode) {
      // Only the rows that node still holds: a client that moved meanwhile keeps its new owner.
      if (ids.length > 0) {
        await this.repository.markDisconnected(ids, now, node);
        this.log.info(
          { clients: ids.length, node },
          'marked disconnected the clients of a node that left the cluster',
        );
      }
      if (node !== undefined) this.onNodeLost(node, ids);
    }
    for (const row of stale)
      Object.assign(row, { connectionState: 'disconnected', disconnectedAt: now, owner: null });
    const present = new Set<string>();
    for (const row of rows) {
      present.add(row.id);
      if (row.owner?.nodeId === this.nodeId && !startUp) continue; // this node's own writes are the truth
      if (this.holdsHere(row.id)) continue;
      const sig = signature(row);
      if (this.seen.get(row.id) === sig) continue;
      this.seen.set(row.id, sig);
      if (row.connectionState === 'connected' && row.owner) this.owners.set(row.id, { ...row.owner });
      else this.owners.delete(row.id);
      this.remember(fromStored(row));
    }
    for (const id of [...this.records.keys()]) {
      if (present.has(id) || this.holdsHere(id)) continue;
      this.seen.delete(id);
      this.owners.delete(id);
      this.forget(id);
    }
  }

  /**
   * This node closed its copy of a client another node took over: the client stays listed connected, held by
   * `owner`, rather than disconnected until the next refresh reads the row that node wrote.
   */
  movedTo(id: string, owner: ClientOwner): void {
    const record = this.records.get(id);
    if (!record || this.holdsHere(id)) return;
    this.owners.set(id, { ...owner });
    this.seen.delete(id);
    // Its tunnels are listed again from the row the new owner writes.
    this.remember({ ...record, connection_state: 'connected', disconnected_at: null });
  }

  private holdsHere(id: string): boolean {
    return this.owners.get(id)?.nodeId === this.nodeId;
  }
}
