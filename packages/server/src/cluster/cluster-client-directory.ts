import type { Clock } from '../core/auth/ports.js';
import { CachedClientDirectory } from '../core/clients/cached-client-directory.js';
import type { ClientEvents, ClientOwner } from '../core/clients/client-events.js';
import type {
  ClientChangeFeed,
  ClientChanges,
  ClientRepository,
  ClientsLog,
  StoredClient,
} from '../core/clients/ports.js';
import { fromStored } from '../core/clients/stored-client.js';
import { forEachInSlices } from '../core/slices.js';

/** What changes in a row when another node changes the client. */
const signature = (row: StoredClient): string =>
  JSON.stringify([row.connectionState, row.owner, row.disconnectedAt, row.details]);

export interface ClusterDirectorySettings {
  /** The nodes whose presence is live. */
  liveNodes: () => Promise<ReadonlySet<string>>;
  /** False while presence cannot be trusted (NATS just came back): nothing is marked disconnected then. */
  presenceSettled?: () => boolean;
  /**
   * Every row is read again at least this often (else only the rows changed since the last reading): what a
   * writer whose clock was behind by more than `overlapMs` changed is taken in then.
   */
  fullReadMs: number;
  /** A reading of changes starts this long before the previous reading did (clocks of writers, slow commits). */
  overlapMs: number;
}

/**
 * The client directory of one node of a cluster: the cache of CachedClientDirectory for the clients this node
 * holds (it writes their rows), and the database read again every heartbeat for the others — only the rows
 * changed and the ids deleted since the last reading; with them the rows of the nodes that left since (marked
 * disconnected); every row at start-up, when a node joins, after presence was unsettled, and every `fullReadMs`.
 * Only the clients whose owner node is no longer live (presence) are marked disconnected, never those another live
 * node holds.
 */
export class ClusterClientDirectory extends CachedClientDirectory {
  private readonly seen = new Map<string, string>();
  private lastLive = new Set<string>();
  /** When the last reading (of changes or of every row) and the last full reading started. */
  private lastReadAt: number | undefined;
  private lastFullAt = 0;
  /** Presence was unsettled at a reading: the next settled one reads every row to find stale clients. */
  private staleCheckPending = false;

  constructor(
    private readonly changeFeed: ClientRepository & ClientChangeFeed,
    events: ClientEvents,
    nodeId: string,
    clock: Clock,
    log: ClientsLog,
    private readonly settings: ClusterDirectorySettings,
  ) {
    super(changeFeed, events, nodeId, clock, log);
  }

  /** Told of the clients a node held when it left the cluster (their rows are marked disconnected). */
  onNodeLost: (nodeId: string, clientIds: string[]) => void = () => undefined;

  override async load(): Promise<void> {
    await this.refresh({ startUp: true });
    this.events.publish('recordsReloaded', {});
  }

  /**
   * Takes in what other nodes changed and marks disconnected the clients of nodes gone silent. At start-up the
   * clients stored as held by this node are stale too (this process holds nothing yet).
   */
  async refresh({ startUp = false } = {}): Promise<void> {
    const live = await this.settings.liveNodes();
    const settled = this.settings.presenceSettled?.() ?? true;
    const startedAt = this.clock.now().getTime();
    const lost = [...this.lastLive].filter((node) => !live.has(node));
    const full =
      startUp ||
      this.lastReadAt === undefined ||
      [...live].some((node) => !this.lastLive.has(node)) ||
      (settled && this.staleCheckPending) ||
      startedAt - this.lastFullAt >= this.settings.fullReadMs;
    const { rows, removed } = full
      ? { rows: await this.repository.loadAll(), removed: [] }
      : await this.changesAndRowsOf(settled ? lost : []);
    await this.markStale(rows, live, settled, startUp);
    await this.take(rows, startUp);
    const present = new Set<string>();
    await forEachInSlices(rows, (row) => present.add(row.id));
    const gone = full ? [...this.records.keys()] : removed;
    await forEachInSlices(gone, (id) => {
      if (present.has(id) || this.holdsHere(id) || !this.records.has(id)) return;
      this.seen.delete(id);
      this.owners.delete(id);
      this.forget(id);
    });
    this.lastReadAt = startedAt;
    if (full) this.lastFullAt = startedAt;
    if (!settled) this.staleCheckPending = true;
    else if (full) this.staleCheckPending = false;
  }

  /**
   * The rows changed since the last reading, and the rows still held by the nodes just lost: a dead node changed
   * nothing lately, and reading every row instead (30,000 in the cluster bench, on every survivor while the dead
   * node's agents arrive) held each survivor's event loop for up to 860 ms.
   */
  private async changesAndRowsOf(lost: readonly string[]): Promise<ClientChanges> {
    const changes = await this.changeFeed.changedSince((this.lastReadAt ?? 0) - this.settings.overlapMs);
    if (lost.length === 0) return changes;
    const held = await this.changeFeed.heldBy(lost);
    const ids = new Set(held.map((row) => row.id));
    // Both are current; the rows read last win.
    return { rows: [...changes.rows.filter((row) => !ids.has(row.id)), ...held], removed: changes.removed };
  }

  /**
   * Another node holds the client now (presence says so; or this node closed its copy of a client another node
   * took over): it is listed connected there rather than as it was until the next refresh reads the row that node
   * wrote, connected since its epoch (the time of the attach, a few ms later in a burst; the row corrects it). A
   * connection already known, or a newer one, changes nothing.
   */
  movedTo(id: string, owner: ClientOwner): void {
    const record = this.records.get(id);
    const known = this.owners.get(id);
    if (!record || this.holdsHere(id) || (known?.nodeId === owner.nodeId && known.epoch >= owner.epoch))
      return;
    this.owners.set(id, { ...owner });
    this.seen.delete(id);
    // Its tunnels are listed again from the row the new owner writes.
    this.remember({
      ...record,
      connection_state: 'connected',
      connected_at: new Date(owner.epoch).toISOString(),
      disconnected_at: null,
    });
  }

  /** Marks disconnected (in the database and in `rows`) the connected rows of nodes no longer live. */
  private async markStale(
    rows: StoredClient[],
    live: ReadonlySet<string>,
    settled: boolean,
    startUp: boolean,
  ): Promise<void> {
    const now = this.clock.now().getTime();
    const stale: StoredClient[] = [];
    // In slices: at a node's death its rows are read, 10,000 of them, while its agents reconnect and the API is asked.
    if (settled)
      await forEachInSlices(rows, (row) => {
        if (
          row.connectionState === 'connected' &&
          !this.holdsHere(row.id) &&
          !this.heldElsewhereSince(row, live) &&
          (!row.owner || !live.has(row.owner.nodeId) || (startUp ? row.owner.nodeId === this.nodeId : false))
        )
          stale.push(row);
      });
    const byNode = new Map<string | undefined, string[]>();
    for (const row of stale) {
      const ids = byNode.get(row.owner?.nodeId) ?? [];
      ids.push(row.id);
      byNode.set(row.owner?.nodeId, ids);
    }
    // Nodes gone since the last refresh that held no clients may still have coordinated runs.
    if (settled)
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
    // A client presence showed moving meanwhile keeps its row as read, which take() then leaves alone.
    for (const row of stale)
      if (!this.heldElsewhereSince(row, live))
        Object.assign(row, { connectionState: 'disconnected', disconnectedAt: now, owner: null });
  }

  /** Takes in the rows other nodes changed. */
  private take(rows: readonly StoredClient[], startUp: boolean): Promise<void> {
    return forEachInSlices(rows, (row) => {
      if (row.owner?.nodeId === this.nodeId && !startUp) return; // this node's own writes are the truth
      if (this.holdsHere(row.id)) {
        // Another node took this one for gone (its heartbeats came late) and marked the client disconnected: the
        // row is written again, or every other node would list it disconnected while it is connected here.
        if (!row.owner) this.rewrite(row.id);
        return;
      }
      // A row of an older connection than presence has shown (movedTo): its new owner's row is yet to come.
      const known = this.owners.get(row.id);
      if (row.owner && known && known.nodeId !== row.owner.nodeId && known.epoch > row.owner.epoch) return;
      const sig = signature(row);
      if (this.seen.get(row.id) === sig) return;
      this.seen.set(row.id, sig);
      if (row.connectionState === 'connected' && row.owner) this.owners.set(row.id, { ...row.owner });
      else this.owners.delete(row.id);
      this.remember(fromStored(row));
    });
  }

  /**
   * Whether presence has shown the client held by another live node on a newer connection than the row's: a
   * failed node's agent that moved before its new owner's row was read is not marked disconnected.
   */
  private heldElsewhereSince(row: StoredClient, live: ReadonlySet<string>): boolean {
    const known = this.owners.get(row.id);
    return (
      known !== undefined &&
      known.nodeId !== this.nodeId &&
      live.has(known.nodeId) &&
      (row.owner?.nodeId !== known.nodeId || row.owner.epoch < known.epoch)
    );
  }

  private holdsHere(id: string): boolean {
    return this.owners.get(id)?.nodeId === this.nodeId;
  }
}
