import type { JobStatus } from '@svc/protocol';
import type { ClientRecord } from './client-record.js';

/** Which node holds a client's connection, and which connection of it (a later connection has a higher epoch). */
export interface ClientOwner {
  /** `[cluster] node_id`; a single svcd uses its host name. */
  nodeId: string;
  /** Increases with every accepted hello of the node, so a late event of an older connection can be told apart. */
  epoch: number;
}

export type OutputStream = 'stdout' | 'stderr';

/** What happens to clients and their jobs, by event type. */
export interface ClientEventMap {
  /** A hello was accepted (a new connection, or a reconnect replacing the old one). */
  attached: { clientId: string; owner: ClientOwner };
  /** The client's connection ended (its record says disconnected). */
  detached: { clientId: string; owner: ClientOwner };
  /** The client's record was deleted. */
  removed: { clientId: string };
  /** `after` replaced `before`; `before` undefined = a new client, `after` undefined = the record was deleted. */
  recordChanged: { clientId: string; before: ClientRecord | undefined; after: ClientRecord | undefined };
  /** Every record was read again from the database (start-up): derived views rebuild from the directory. */
  recordsReloaded: Record<string, never>;
  /** Output text of a job as it arrives from the agent. */
  jobOutput: { clientId: string; jid: string; stream: OutputStream; text: string };
  /** A job's result was stored with this status. */
  jobFinished: { jid: string; status: JobStatus };
}

export type ClientEventType = keyof ClientEventMap;

/** Event types that can be followed for one key: a client id, or a job id for the job events. */
export type KeyedEventType = Exclude<ClientEventType, 'recordsReloaded'>;

export type ClientEventHandler<T extends ClientEventType> = (event: ClientEventMap[T]) => void;

export type Unsubscribe = () => void;

/** The key an event is published under: the job id of job events, the client id of the others. */
export function eventKey(type: ClientEventType, event: ClientEventMap[ClientEventType]): string | undefined {
  if (type === 'jobOutput' || type === 'jobFinished') return (event as { jid: string }).jid;
  return (event as { clientId?: string }).clientId;
}

/**
 * Client events: typed publish/subscribe of what happens to clients (attached, detached, record changed,
 * removed) and to their jobs (output, finished). Handlers run synchronously and every handler sees the events in
 * the order they were published (one published from inside a handler is delivered after the current one). A
 * single svcd delivers in process; a cluster adapter also carries them between nodes.
 */
export interface ClientEvents {
  publish<T extends ClientEventType>(type: T, event: ClientEventMap[T]): void;
  /** Every event of the type. */
  subscribe<T extends ClientEventType>(type: T, handler: ClientEventHandler<T>): Unsubscribe;
  /** The events of the type for one key only (see `eventKey`). */
  subscribeTo<T extends KeyedEventType>(type: T, key: string, handler: ClientEventHandler<T>): Unsubscribe;
  /** Whether anyone follows this key (job output nobody watches is not even decoded). */
  followed(type: KeyedEventType, key: string): boolean;
}
