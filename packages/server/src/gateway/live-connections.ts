import type { FactsUpdate, Hello } from '@svc/protocol';
import type { Clock } from '../core/auth/ports.js';
import type { ClientDirectory, ConnectionIdentity } from '../core/clients/client-directory.js';
import type { ClientRecord } from '../core/clients/client-record.js';
import type { JobAgent } from '../core/jobs/ports.js';
import type { TunnelAgent } from '../core/tunnels/ports.js';

/** A live agent connection as this node holds it. */
/**
 * At shutdown the agents get the polite goodbye but are not waited for: svcd is going either way, and with
 * thousands of agents their answers (close frames, FINs) only queue up behind each other. This is long enough
 * for the goodbye to leave the socket, and an agent's reconnect does not depend on it.
 */
export const SHUTDOWN_GRACE_MS = 200;

export interface LiveConnection {
  /** The agent process's random session id from its hello. */
  readonly sessionId: string;
  /**
   * Ends the connection politely; it has already been let go of. `graceMs` is how long the agent may take to
   * close its side before the link is cut (the connection's own default when absent).
   */
  close(reason: string, graceMs?: number): void;
  /**
   * Ends the connection politely as the process exits: the goodbye only, with no log line and no timer, since the
   * kernel cuts whatever lingers. Absent where the link has no goodbye of its own (close() is used then).
   */
  sayGoodbye?(): void;
  /** Asks the agent to connect again at once (a draining node); absent where the link cannot say it. */
  askToReconnect?(reason: string): void;
  /** Tunnels through this connection; absent where the link cannot carry them. */
  readonly tunnels?: TunnelAgent;
  /** Jobs through this connection; absent where the link cannot run them. */
  readonly jobs?: JobAgent;
}

export type AttachResult = { ok: true; record: ClientRecord } | { ok: false; message: string };

interface Held {
  connection: LiveConnection;
  /** The directory's epoch of this connection. */
  epoch: number;
  clientAuthId: string;
}

/**
 * The agent connections this node holds, by client id: node-local, used by the gateway only (core never sees a
 * connection; it reaches agents through AgentDispatch). Accepting or losing a connection is told to the client
 * directory, which keeps the records.
 */
export class LiveConnections {
  private readonly live = new Map<string, Held>();

  /**
   * `admission` may refuse a hello before anything else (a cluster refuses a client id that keeps moving between
   * nodes); it answers the refusal message.
   */
  constructor(
    private readonly directory: ClientDirectory,
    private readonly clock: Clock,
    private readonly admission?: (clientId: string) => string | undefined,
  ) {}

  /**
   * Accepts a hello. A client id that is connected with another session id is refused; the same session id is the
   * same agent reconnecting before its old link was noticed dead, so the old connection is dropped.
   */
  attach(connection: LiveConnection, hello: Hello, who: ConnectionIdentity): AttachResult {
    const id = hello.client_id;
    const current = this.live.get(id);
    if (current && current.connection !== connection) {
      if (current.connection.sessionId !== hello.session_id) {
        return { ok: false, message: `client '${id}' is already connected` };
      }
      this.live.delete(id);
      current.connection.close('replaced by a new connection of the same agent session');
    }
    const refusal = current ? undefined : this.admission?.(id);
    if (refusal !== undefined) return { ok: false, message: refusal };
    const held: Held = { connection, epoch: 0, clientAuthId: who.clientAuthId };
    this.live.set(id, held);
    const { record, owner } = this.directory.attach(hello, who);
    held.epoch = owner.epoch;
    return { ok: true, record };
  }

  /** Applies a facts.update from the connection that holds the client; false when it no longer does. */
  updateFacts(id: string, connection: LiveConnection, update: FactsUpdate): boolean {
    const held = this.live.get(id);
    if (held?.connection !== connection) return false;
    return this.directory.updateFacts(id, held.epoch, update);
  }

  /** The connection ended; marks the client disconnected unless a newer connection has taken over. */
  detach(id: string, connection: LiveConnection): void {
    const held = this.live.get(id);
    if (held?.connection !== connection) return;
    this.live.delete(id);
    this.directory.detach(id, held.epoch);
  }

  /** The directory's epoch of the connection this node holds for the client. */
  epochOf(id: string): number | undefined {
    return this.live.get(id)?.epoch;
  }

  get(id: string): LiveConnection | undefined {
    return this.live.get(id)?.connection;
  }

  get size(): number {
    return this.live.size;
  }

  /** Closes the client's connection (the client is marked disconnected); false when this node does not hold it. */
  async disconnect(id: string, reason: string): Promise<boolean> {
    const held = this.live.get(id);
    if (!held) return false;
    this.drop(id, held, reason);
    await this.directory.flush();
    return true;
  }

  /** Closes the connections that logged in with this client credential; resolves with how many. */
  async disconnectByCredential(clientAuthId: string, reason: string): Promise<number> {
    let count = 0;
    for (const [id, held] of [...this.live]) {
      if (held.clientAuthId !== clientAuthId) continue;
      this.drop(id, held, reason);
      count += 1;
    }
    await this.directory.flush();
    return count;
  }

  /**
   * Shutdown: closes every connection and marks its client disconnected, stored with one batch write (a save per
   * client took seconds with 10,000 agents) after the writes already queued for them.
   */
  async closeAll(reason: string): Promise<void> {
    const at = this.clock.now();
    const ids = [...this.live.keys()];
    for (const [id, held] of [...this.live]) {
      this.drop(id, held, reason, { at, save: false }, SHUTDOWN_GRACE_MS);
    }
    await this.directory.storeDisconnected(ids, at);
  }

  /**
   * Drain: lets go of every connection, stores the clients disconnected (one batch write), and only then asks each
   * agent to reconnect and closes its link, so that the row the node it moves to writes comes after this node's.
   * Resolves with the ids it held.
   */
  async moveAll(reason: string): Promise<string[]> {
    const { ids, connections } = await this.releaseAll();
    for (const connection of connections) {
      connection.askToReconnect?.(reason);
      connection.close(reason);
    }
    return ids;
  }

  /**
   * Lets go of every connection and stores the clients disconnected (one batch write) without closing a link:
   * the caller closes them (drain), or the process exits and the kernel closes the sockets (stop).
   */
  async releaseAll(): Promise<{ ids: string[]; connections: LiveConnection[] }> {
    const at = this.clock.now();
    const held = [...this.live];
    for (const [id, { epoch }] of held) {
      this.live.delete(id);
      this.directory.detach(id, epoch, { at, save: false });
    }
    const ids = held.map(([id]) => id);
    await this.directory.storeDisconnected(ids, at);
    return { ids, connections: held.map(([, { connection }]) => connection) };
  }

  private drop(
    id: string,
    held: Held,
    reason: string,
    how?: { at: Date; save: boolean },
    graceMs?: number,
  ): void {
    this.live.delete(id);
    this.directory.detach(id, held.epoch, how);
    held.connection.close(reason, graceMs);
  }
}
