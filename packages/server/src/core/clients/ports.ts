import type { ClientOwner } from './client-events.js';
import type { ClientRecord, ConnectionState } from './client-record.js';

/** Checks an agent's SSH password login: user = client-auth-id. */
export interface ClientAuthenticator {
  verify(authId: string, password: string, remoteIp: string): Promise<boolean>;
}

/** A client row as the repository keeps it; `details` is the rest of the record, parsed from JSON. */
export interface StoredClient {
  id: string;
  clientAuthId: string;
  connectionState: ConnectionState;
  /** Epoch milliseconds, null while connected. */
  disconnectedAt: number | null;
  /** The node and connection epoch holding the connected client; null while it is disconnected. */
  owner: ClientOwner | null;
  details: unknown;
}

/** Persistence of client records; the database is the truth, the client directory keeps a cache of it. */
export interface ClientRepository {
  loadAll(): Promise<StoredClient[]>;
  /**
   * Inserts or replaces the row of `client.id`. With `ifOwner` only an existing row still held by that node and
   * connection epoch is replaced: a late disconnect of a connection another node has taken over changes nothing.
   */
  save(client: StoredClient, ifOwner?: ClientOwner): Promise<void>;
  /** Marks every connected row disconnected at `at`, without an owner (start-up of the only node). */
  markAllDisconnected(at: number): Promise<void>;
  /**
   * Marks these rows disconnected at `at`, without an owner, in one go (shutdown: this node's clients). With
   * `ownerNode` only the rows that node still holds: one another node took over meanwhile stays connected.
   */
  markDisconnected(ids: readonly string[], at: number, ownerNode?: string): Promise<void>;
  /** Deletes the row and what is stored for the client (its tunnel definitions) at once. */
  delete(id: string): Promise<boolean>;
  /** Deletes disconnected rows with disconnected_at before `cutoff` (as `delete` does); returns how many. */
  deleteDisconnectedBefore(cutoff: number): Promise<number>;
}

/** What changed in the clients table from a time on: the rows written and the ids deleted. */
export interface ClientChanges {
  /** Rows written at or after the time. */
  rows: StoredClient[];
  /** Ids deleted at or after the time; an id written again since is among `rows` too. */
  removed: string[];
}

/**
 * The changes of client rows by time of writing (epoch ms of the writer), so that a cluster node reads what
 * other nodes changed rather than every row. Deletions are remembered a day.
 */
export interface ClientChangeFeed {
  changedSince(since: number): Promise<ClientChanges>;
  /** The connected rows these nodes hold (nodes that left the cluster: their rows alone need marking). */
  heldBy(nodeIds: readonly string[]): Promise<StoredClient[]>;
}

/** The few log calls the clients domain makes. */
export interface ClientsLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** The client groups a client is in, for the computed `groups` field of GET /clients (see client-groups/). */
export interface GroupClassifier {
  /** Reads the current groups once; the function gives a client's group ids. */
  classifier(): Promise<(record: ClientRecord) => string[]>;
}
