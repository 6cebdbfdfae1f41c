import { AppError, ERROR_CODES, applyListQuery, type FactsUpdate, type Hello } from '@svc/protocol';
import type { Clock } from '../auth/ports.js';
import {
  clientNotFound,
  type Attached,
  type ClientCounts,
  type ClientDirectory,
  type ConnectionIdentity,
} from './client-directory.js';
import type { ClientEvents, ClientOwner } from './client-events.js';
import {
  connectedRecord,
  disconnectedRecord,
  withFacts,
  withTunnels,
  type ClientRecord,
  type ClientTunnel,
} from './client-record.js';
import { KeyedQueue } from './keyed-queue.js';
import type { ClientRepository, ClientsLog } from './ports.js';
import { fromStored, toStored } from './stored-client.js';

const sameTunnels = (a: readonly ClientTunnel[], b: readonly ClientTunnel[]): boolean =>
  a.length === b.length && (a.length === 0 || JSON.stringify(a) === JSON.stringify(b));

const isConnected = (record: ClientRecord | undefined): boolean => record?.connection_state === 'connected';

/**
 * The client directory of a single svcd: the database is the truth for records and this node the only writer,
 * so it keeps a cache of them (listing 10k clients parses no JSON) that every change updates before it is
 * persisted. Writes of one client are applied in order; a failed write is logged and the cache keeps the new
 * state. Every connected client is held by this node.
 */
export class CachedClientDirectory implements ClientDirectory {
  protected readonly records = new Map<string, ClientRecord>();
  protected readonly owners = new Map<string, ClientOwner>();
  protected readonly writes = new KeyedQueue();
  protected sortedIds: string[] | undefined;
  /** sortedById's answer, valid while `changes` is the same (each /clients page would walk every record). */
  private sortedRecords: { changes: number; records: readonly ClientRecord[] } | undefined;
  protected changes = 0;
  protected connected = 0;
  private lastEpoch = 0;

  constructor(
    protected readonly repository: ClientRepository,
    protected readonly events: ClientEvents,
    protected readonly nodeId: string,
    protected readonly clock: Clock,
    protected readonly log: ClientsLog,
  ) {}

  /** Start-up: no connection survives a restart of the only node, so every stored client is disconnected. */
  async load(): Promise<void> {
    await this.repository.markAllDisconnected(this.clock.now().getTime());
    const rows = await this.repository.loadAll();
    this.records.clear();
    this.owners.clear();
    this.connected = 0;
    this.changes += 1;
    for (const row of rows) {
      const record = fromStored(row);
      this.records.set(row.id, record);
      if (isConnected(record)) this.connected += 1;
    }
    this.sortedIds = undefined;
    this.events.publish('recordsReloaded', {});
  }

  get version(): number {
    return this.changes;
  }

  get(id: string): ClientRecord | undefined {
    return this.records.get(id);
  }

  owner(id: string): ClientOwner | undefined {
    return this.owners.get(id);
  }

  idsInOrder(): readonly string[] {
    this.sortedIds ??= applyListQuery(
      [...this.records.keys()].map((id) => ({ id })),
      { sort: [{ field: 'id', direction: 'asc' }], filters: [] },
    ).data.map((item) => item.id ?? '');
    return this.sortedIds;
  }

  sortedById(): readonly ClientRecord[] {
    if (this.sortedRecords?.changes === this.changes) return this.sortedRecords.records;
    const out: ClientRecord[] = [];
    for (const id of this.idsInOrder()) {
      const record = this.records.get(id);
      if (record) out.push(record);
    }
    this.sortedRecords = { changes: this.changes, records: out };
    return out;
  }

  counts(): ClientCounts {
    return { connected: this.connected, disconnected: this.records.size - this.connected };
  }

  countByCredential(clientAuthId: string): number {
    let count = 0;
    for (const id of this.owners.keys())
      if (this.records.get(id)?.client_auth_id === clientAuthId) count += 1;
    return count;
  }

  attach(hello: Hello, who: ConnectionIdentity): Attached {
    const id = hello.client_id;
    // Increasing within the process, and across restarts while the clock does not go back.
    this.lastEpoch = Math.max(this.lastEpoch + 1, this.clock.now().getTime());
    const owner: ClientOwner = { nodeId: this.nodeId, epoch: this.lastEpoch };
    this.owners.set(id, owner);
    const record = connectedRecord(hello, { id, ...who, connectedAt: this.clock.now() });
    this.put(record);
    this.events.publish('attached', { clientId: id, owner });
    return { record, owner };
  }

  updateFacts(id: string, epoch: number, update: FactsUpdate): boolean {
    const record = this.records.get(id);
    if (!record || this.owners.get(id)?.epoch !== epoch) return false;
    this.put(withFacts(record, update));
    return true;
  }

  setTunnels(id: string, tunnels: ClientTunnel[]): void {
    const record = this.records.get(id);
    // Each agent connection ends with its tunnels re-opened (none, mostly): unchanged, the row is not written again.
    if (record && this.owners.has(id) && !sameTunnels(record.tunnels, tunnels))
      this.put(withTunnels(record, tunnels));
  }

  detach(id: string, epoch: number, { at = this.clock.now(), save = true } = {}): void {
    const owner = this.owners.get(id);
    if (owner?.epoch !== epoch) return;
    this.owners.delete(id);
    const record = this.records.get(id);
    if (record) {
      const disconnected = disconnectedRecord(record, at);
      // Only while the row still names this connection: another node may have taken the client over.
      if (save) this.put(disconnected, owner);
      else this.remember(disconnected);
    }
    this.events.publish('detached', { clientId: id, owner });
  }

  async storeDisconnected(ids: readonly string[], at: Date): Promise<void> {
    await this.flush();
    await this.repository
      .markDisconnected(ids, at.getTime(), this.nodeId)
      .catch((err: unknown) =>
        this.log.warn({ err, clients: ids.length }, 'marking the clients disconnected failed'),
      );
  }

  async delete(id: string): Promise<void> {
    const record = this.records.get(id);
    if (!record) throw clientNotFound(id);
    if (this.owners.has(id)) {
      throw new AppError(
        'conflict',
        ERROR_CODES.clientConnected,
        `Client '${id}' is connected`,
        'only disconnected clients can be deleted',
      );
    }
    await this.writes.run(id, () => this.repository.delete(id));
    // A reconnect while the row was being deleted has put a new record in place; keep that one.
    if (this.records.get(id) === record) this.forget(id);
  }

  async purge(keepMs: number): Promise<number> {
    const cutoff = this.clock.now().getTime() - keepMs;
    const stale = [...this.records.values()].filter(
      (r) =>
        r.connection_state === 'disconnected' &&
        r.disconnected_at !== null &&
        Date.parse(r.disconnected_at) < cutoff,
    );
    if (stale.length === 0) return 0;
    await this.repository.deleteDisconnectedBefore(cutoff);
    for (const record of stale) if (this.records.get(record.id) === record) this.forget(record.id);
    return stale.length;
  }

  flush(): Promise<void> {
    return this.writes.drain();
  }

  /** Updates the cached record only. */
  protected remember(record: ClientRecord): void {
    this.changes += 1;
    const before = this.records.get(record.id);
    if (!before) this.sortedIds = undefined;
    this.connected += Number(isConnected(record)) - Number(isConnected(before));
    this.records.set(record.id, record);
    this.events.publish('recordChanged', { clientId: record.id, before, after: record });
  }

  private put(record: ClientRecord, ifOwner?: ClientOwner): void {
    this.remember(record);
    this.store(record, ifOwner);
  }

  /** Writes the row of a client this node holds again, as the cache has it. */
  protected rewrite(id: string): void {
    const record = this.records.get(id);
    if (record && this.owners.get(id)?.nodeId === this.nodeId) this.store(record);
  }

  /** Queues the write of the record's row, after the writes already queued for that client. */
  private store(record: ClientRecord, ifOwner?: ClientOwner): void {
    const row = toStored(record, this.owners.get(record.id));
    this.writes
      .run(record.id, () => this.repository.save(row, ifOwner))
      .catch((err: unknown) =>
        this.log.warn({ err, client_id: record.id }, 'saving the client record failed'),
      );
  }

  protected forget(id: string): void {
    this.changes += 1;
    const before = this.records.get(id);
    this.records.delete(id);
    this.connected -= Number(isConnected(before));
    this.sortedIds = undefined;
    this.events.publish('recordChanged', { clientId: id, before, after: undefined });
    this.events.publish('removed', { clientId: id });
  }
}
