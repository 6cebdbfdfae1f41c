import { AppError, ERROR_CODES, type FactsUpdate, type Hello } from '@svc/protocol';
import type { ClientOwner } from './client-events.js';
import type { ClientRecord, ClientTunnel } from './client-record.js';

export interface ConnectionIdentity {
  clientAuthId: string;
  /** Masked remote address with port. */
  address: string;
}

export interface ClientCounts {
  connected: number;
  disconnected: number;
}

/** A client whose hello this node accepted: its record and the connection's owner (node, epoch). */
export interface Attached {
  record: ClientRecord;
  owner: ClientOwner;
}

export const clientNotFound = (id: string): AppError =>
  new AppError('not_found', ERROR_CODES.clientNotFound, `Client '${id}' not found`);

/**
 * The client directory: every client record (connected anywhere or not), who holds each connected client (owner
 * node and connection epoch), and their persistence. Changes are published as client events (attached,
 * detached, recordChanged, removed, recordsReloaded). Reads are synchronous: an implementation keeps the records
 * in memory and the database (the truth) behind it. Single node: `CachedClientDirectory`; a cluster adapter
 * keeps the same reads and learns other nodes' changes from their events.
 */
export interface ClientDirectory {
  /** Start-up: reads every record; clients no live node holds are marked disconnected first. */
  load(): Promise<void>;
  get(id: string): ClientRecord | undefined;
  /** Who holds the client's connection; undefined while it is not connected. */
  owner(id: string): ClientOwner | undefined;
  /** Changes with every change of any record, so derived views know when to recompute. */
  readonly version: number;
  /**
   * Every client id, ordered as the list grammar sorts ids (case-insensitive, then case-sensitive). The same array
   * is returned until a client is added or deleted, so its identity tells whether the order is still valid.
   */
  idsInOrder(): readonly string[];
  /** Every record, ordered by id as `idsInOrder`; the same array until a record changes, so never modify it. */
  sortedById(): readonly ClientRecord[];
  /** Connected (on any node) and disconnected clients. */
  counts(): ClientCounts;
  /** Connected clients (on any node) that logged in with this client credential. */
  countByCredential(clientAuthId: string): number;

  /** This node accepted a hello: stores the connected record with a new epoch of this node. */
  attach(hello: Hello, who: ConnectionIdentity): Attached;
  /** A facts.update of the connection of `epoch`; false when that connection no longer holds the client. */
  updateFacts(id: string, epoch: number, update: FactsUpdate): boolean;
  /** Shows the open tunnels of a connected client in its record. */
  setTunnels(id: string, tunnels: ClientTunnel[]): void;
  /**
   * The connection of `epoch` ended: marks the client disconnected at `at` unless a newer connection holds it.
   * `save: false` leaves the write to `storeDisconnected` (one batch at shutdown).
   */
  detach(id: string, epoch: number, how?: { at?: Date; save?: boolean }): void;
  /** Stores these clients as disconnected at `at` in one write, after the writes queued for them. */
  storeDisconnected(ids: readonly string[], at: Date): Promise<void>;
  /** Deletes a disconnected client (404 unknown, 409 connected). */
  delete(id: string): Promise<void>;
  /** Deletes clients disconnected for longer than `keepMs`; returns how many. */
  purge(keepMs: number): Promise<number>;
  /** Waits until every write made so far has reached the database (or failed). */
  flush(): Promise<void>;
}
