import { AppError, ERROR_CODES, applyListQuery, type FactsUpdate, type Hello } from '@svc/protocol';
import type { Clock } from '../auth/ports.js';
import type { JobAgent } from '../jobs/ports.js';
import type { TunnelAgent } from '../tunnels/ports.js';
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

/** A live agent connection as the registry sees it. */
export interface LiveConnection {
  /** The agent process's random session id from its hello. */
  readonly sessionId: string;
  /** Ends the connection; the registry has already let go of it. */
  close(reason: string): void;
  /** Tunnels through this connection; absent where the link cannot carry them. */
  readonly tunnels?: TunnelAgent;
  /** Jobs through this connection; absent where the link cannot run them. */
  readonly jobs?: JobAgent;
}

/** Told when clients come and go, e.g. to close and re-open their tunnels. */
export interface ClientObserver {
  /** A hello was accepted (a new connection, or a reconnect replacing the old one). */
  attached(id: string): void;
  /** The client's connection ended. */
  detached(id: string): void;
  /** The client's record was deleted. */
  removed(id: string): void;
}

/**
 * Told of every change of a cached record, synchronously and in order, so derived views (group members) can
 * follow one record at a time instead of recomputing over every client. Keep it cheap: it runs on every change.
 */
export interface RecordWatcher {
  /** `after` replaced `before`; `before` undefined = a new client, `after` undefined = the record was deleted. */
  recordChanged(id: string, before: ClientRecord | undefined, after: ClientRecord | undefined): void;
  /** Every record was reloaded from the database (start-up): rebuild from the registry. */
  recordsReloaded(): void;
}

export interface ConnectionIdentity {
  clientAuthId: string;
  /** Masked remote address with port. */
  address: string;
}

export type AttachResult = { ok: true; record: ClientRecord } | { ok: false; message: string };

export interface ClientCounts {
  connected: number;
  disconnected: number;
}

/** When a client was disconnected, and whether to save its record now (false: the caller stores a batch). */
interface DisconnectOptions {
  at?: Date;
  save?: boolean;
}

export const clientNotFound = (id: string): AppError =>
  new AppError('not_found', ERROR_CODES.clientNotFound, `Client '${id}' not found`);

/**
 * Client records and the live connections of this node. The database is the truth for records; this keeps a
 * cache of them (so listing 10k clients parses no JSON) that every change updates before it is persisted.
 * Writes of one client are applied in order; a failed write is logged and the cache keeps the new state.
 */
export class ClientRegistry {
  private readonly records = new Map<string, ClientRecord>();
  private readonly live = new Map<string, LiveConnection>();
  private readonly writes = new KeyedQueue();
  private readonly observers: ClientObserver[] = [];
  private readonly watchers: RecordWatcher[] = [];
  private sortedIds: string[] | undefined;
  private changes = 0;

  constructor(
    private readonly repository: ClientRepository,
    private readonly clock: Clock,
    private readonly log: ClientsLog,
  ) {}

  /** Start-up: no connection survives a restart, so every stored client is disconnected until it returns. */
  async load(): Promise<void> {
    await this.repository.markAllDisconnected(this.clock.now().getTime());
    const rows = await this.repository.loadAll();
    this.records.clear();
    this.changes += 1;
    for (const row of rows) this.records.set(row.id, fromStored(row));
    this.sortedIds = undefined;
    for (const watcher of this.watchers) watcher.recordsReloaded();
  }

  /**
   * Accepts a hello. A client id that is connected with another session id is refused; the same session id is the
   * same agent reconnecting before its old link was noticed dead, so the old connection is dropped.
   */
  attach(connection: LiveConnection, hello: Hello, who: ConnectionIdentity): AttachResult {
    const id = hello.client_id;
    const current = this.live.get(id);
    if (current && current !== connection) {
      if (current.sessionId !== hello.session_id) {
        return { ok: false, message: `client '${id}' is already connected` };
      }
      this.live.delete(id);
      current.close('replaced by a new connection of the same agent session');
    }
    this.live.set(id, connection);
    const record = connectedRecord(hello, { id, ...who, connectedAt: this.clock.now() });
    this.put(record);
    for (const observer of this.observers) observer.attached(id);
    return { ok: true, record };
  }

  observe(observer: ClientObserver): void {
    this.observers.push(observer);
  }

  watchRecords(watcher: RecordWatcher): void {
    this.watchers.push(watcher);
  }

  /** Shows the open tunnels of a connected client in its record. */
  setTunnels(id: string, tunnels: ClientTunnel[]): void {
    const record = this.records.get(id);
    if (record && this.live.has(id)) this.put(withTunnels(record, tunnels));
  }

  /** Applies a facts.update from the connection that owns the client; false when it no longer does. */
  updateFacts(id: string, connection: LiveConnection, update: FactsUpdate): boolean {
    const record = this.records.get(id);
    if (this.live.get(id) !== connection || !record) return false;
    this.put(withFacts(record, update));
    return true;
  }

  /** The connection ended; marks the client disconnected unless a newer connection has taken over. */
  detach(id: string, connection: LiveConnection): void {
    if (this.live.get(id) !== connection) return;
    this.live.delete(id);
    this.markDisconnected(id);
  }

  /** Changes with every change of any record, so derived views know when to recompute. */
  get version(): number {
    return this.changes;
  }

  get(id: string): ClientRecord | undefined {
    return this.records.get(id);
  }

  connection(id: string): LiveConnection | undefined {
    return this.live.get(id);
  }

  /**
   * Every client id, ordered as the list grammar sorts ids (case-insensitive, then case-sensitive). The same array
   * is returned until a client is added or deleted, so its identity tells whether the order is still valid.
   */
  idsInOrder(): readonly string[] {
    this.sortedIds ??= applyListQuery(
      [...this.records.keys()].map((id) => ({ id })),
      { sort: [{ field: 'id', direction: 'asc' }], filters: [] },
    ).data.map((item) => item.id ?? '');
    return this.sortedIds;
  }

  /** Every record, ordered by id as the list grammar sorts (case-insensitive, then case-sensitive). */
  sortedById(): ClientRecord[] {
    const out: ClientRecord[] = [];
    for (const id of this.idsInOrder()) {
      const record = this.records.get(id);
      if (record) out.push(record);
    }
    return out;
  }

  counts(): ClientCounts {
    return { connected: this.live.size, disconnected: this.records.size - this.live.size };
  }

  /** Deletes a disconnected client (404 unknown, 409 connected). */
  async delete(id: string): Promise<void> {
    const record = this.records.get(id);
    if (!record) throw clientNotFound(id);
    if (this.live.has(id)) {
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

  /** Deletes clients disconnected for longer than `keepMs`; returns how many. */
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

  /** Live connections that logged in with this client-auth id. */
  countByAuthId(authId: string): number {
    let count = 0;
    for (const id of this.live.keys()) if (this.records.get(id)?.client_auth_id === authId) count += 1;
    return count;
  }

  /** Closes the connections that logged in with this client-auth id (its credential is going away). */
  async disconnectByAuthId(authId: string): Promise<void> {
    for (const [id, connection] of [...this.live]) {
      if (this.records.get(id)?.client_auth_id === authId)
        this.drop(id, connection, 'its client credential was removed');
    }
    await this.flush();
  }

  /**
   * Shutdown: closes every live connection and marks its client disconnected, stored with one batch write (a
   * save per client took seconds with 10,000 agents) after the writes already queued for them.
   */
  async closeAll(reason: string): Promise<void> {
    const at = this.clock.now();
    const ids = [...this.live.keys()];
    for (const [id, connection] of [...this.live]) this.drop(id, connection, reason, { at, save: false });
    await this.flush();
    await this.repository
      .markDisconnected(ids, at.getTime())
      .catch((err: unknown) =>
        this.log.warn({ err, clients: ids.length }, 'marking the clients disconnected failed'),
      );
  }

  /** Waits until every write made so far has reached the database (or failed). */
  flush(): Promise<void> {
    return this.writes.drain();
  }

  private drop(id: string, connection: LiveConnection, reason: string, how?: DisconnectOptions): void {
    this.live.delete(id);
    this.markDisconnected(id, how);
    connection.close(reason);
  }

  private markDisconnected(id: string, { at = this.clock.now(), save = true }: DisconnectOptions = {}): void {
    const record = this.records.get(id);
    if (record) {
      const disconnected = disconnectedRecord(record, at);
      if (save) this.put(disconnected);
      else this.remember(disconnected);
    }
    for (const observer of this.observers) observer.detached(id);
  }

  /** Updates the cached record only. */
  private remember(record: ClientRecord): void {
    this.changes += 1;
    const before = this.records.get(record.id);
    if (!before) this.sortedIds = undefined;
    this.records.set(record.id, record);
    for (const watcher of this.watchers) watcher.recordChanged(record.id, before, record);
  }

  private put(record: ClientRecord): void {
    this.remember(record);
    const row = toStored(record);
    this.writes
      .run(record.id, () => this.repository.save(row))
      .catch((err: unknown) =>
        this.log.warn({ err, client_id: record.id }, 'saving the client record failed'),
      );
  }

  private forget(id: string): void {
    this.changes += 1;
    const before = this.records.get(id);
    this.records.delete(id);
    this.sortedIds = undefined;
    for (const watcher of this.watchers) watcher.recordChanged(id, before, undefined);
    for (const observer of this.observers) observer.removed(id);
  }
}
