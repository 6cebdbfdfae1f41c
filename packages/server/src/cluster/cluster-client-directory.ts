import type { Clock } from '../core/auth/ports.js';
import { CachedClientDirectory } from '../core/clients/cached-client-directory.js';
import type { ClientEvents } from '../core/clients/client-events.js';
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

  constructor(
    repository: ClientRepository,
    events: ClientEvents,
    nodeId: string,
    clock: Clock,
    log: ClientsLog,
    private readonly liveNodes: () => Promise<ReadonlySet<string>>,
  ) {
    super(repository, events, nodeId, clock, log);
  }

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
    const stale = rows.filter(
      (row) =>
        row.connectionState === 'connected' &&
        !this.holdsHere(row.id) &&
        (!row.owner || !live.has(row.owner.nodeId) || (startUp ? row.owner.nodeId === this.nodeId : false)),
    );
    if (stale.length > 0) {
      await this.repository.markDisconnected(
        stale.map((row) => row.id),
        now,
      );
      for (const row of stale)
        Object.assign(row, { connectionState: 'disconnected', disconnectedAt: now, owner: null });
      this.log.info(
        { clients: stale.length },
        'marked disconnected the clients of nodes that left the cluster',
      );
    }
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

  private holdsHere(id: string): boolean {
    return this.owners.get(id)?.nodeId === this.nodeId;
  }
}
