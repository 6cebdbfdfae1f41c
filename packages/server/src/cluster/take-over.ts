import type { NatsConnection, Subscription } from 'nats';
import type { Clock } from '../core/auth/ports.js';
import type { ClientOwner } from '../core/clients/client-events.js';
import type { ClientsLog } from '../core/clients/ports.js';
import type { LiveConnections } from '../gateway/live-connections.js';
import { decodeJson, encodeJson } from './dispatch-wire.js';

/** The window `[cluster] takeover_limit` counts in. */
export const TAKEOVER_WINDOW_MS = 60_000;

export interface TakeOverSettings {
  nodeId: string;
  prefix: string;
  /** `[cluster] takeover_limit`: moves of one client id between nodes within a minute before new ones are refused. */
  limit: number;
}

interface TakenOver {
  clientId: string;
  owner: ClientOwner;
}

/**
 * The newest connection of a client wins, wherever it is: the node that took a client over tells the node that
 * held it (`<prefix>.node.<id>.takeover`), which closes its older copy; presence, watching the client keys, finds
 * the same should that message be lost (whichever comes second finds the copy closed already). Two agents sharing an id would take it from each other for ever, so
 * a node counts the moves it sees of each client id and refuses new connections of it past the limit.
 */
export class TakeOvers {
  /** Times of the recent moves (and refusals) of each client id, at most `limit` of them. */
  private readonly recent = new Map<string, number[]>();
  private subscription: Subscription | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly connections: () => LiveConnections,
    /** Keeps the client listed connected, held by `owner`, once this node's copy is closed. */
    private readonly moved: (clientId: string, owner: ClientOwner) => void,
    private readonly settings: TakeOverSettings,
    private readonly clock: Clock,
    private readonly log: ClientsLog,
  ) {}

  serve(): void {
    const subscription = this.nc.subscribe(this.subject(this.settings.nodeId));
    this.subscription = subscription;
    void (async () => {
      for await (const message of subscription) {
        try {
          const { clientId, owner } = decodeJson<TakenOver>(message.data);
          this.lost(clientId, owner);
        } catch (err) {
          this.log.warn({ err }, 'a take-over message could not be handled');
        }
      }
    })();
  }

  close(): void {
    this.subscription?.unsubscribe();
  }

  /** The attach gate: why a new connection of the client is refused, or undefined to accept it. */
  admit(clientId: string): string | undefined {
    const moves = this.count(clientId);
    if (moves < this.settings.limit) return undefined;
    // A refusal keeps the window full: the agent retrying stays refused while the other one holds the id.
    this.note(clientId);
    this.log.warn(
      { client_id: clientId, moves, limit: this.settings.limit },
      'agent refused: its client id moved between nodes too often within a minute (two agents sharing one id?)',
    );
    return `client '${clientId}' moved between nodes ${moves} times within a minute ([cluster] takeover_limit ${this.settings.limit}): two agents seem to share this id; give each its own`;
  }

  /** This node's connection replaced an older one held by `previous`: that node is told to close its copy. */
  tookOver(clientId: string, previous: ClientOwner, owner: ClientOwner): void {
    this.note(clientId);
    this.log.info(
      { client_id: clientId, from_node: previous.nodeId },
      'took over a client from another node (its newest connection wins)',
    );
    try {
      this.nc.publish(this.subject(previous.nodeId), encodeJson({ clientId, owner } satisfies TakenOver));
    } catch (err) {
      this.log.warn({ err, client_id: clientId }, 'telling the previous node of a take-over failed');
    }
  }

  /** Another node holds a client this node does not: listed held there at once. */
  claimedElsewhere(clientId: string, owner: ClientOwner): void {
    this.moved(clientId, owner);
  }

  /** Another node holds a newer connection of the client: this node's older one is closed. */
  lost(clientId: string, owner: ClientOwner): void {
    if (owner.nodeId === this.settings.nodeId) return;
    const connections = this.connections();
    const epoch = connections.epochOf(clientId);
    if (epoch === undefined || epoch >= owner.epoch) return;
    this.note(clientId);
    this.log.warn(
      { client_id: clientId, node: owner.nodeId },
      'closing a connection another node has taken over (the newest connection wins)',
    );
    const closing = connections.disconnect(
      clientId,
      `taken over by a newer connection on node '${owner.nodeId}'`,
    );
    this.moved(clientId, owner);
    closing.catch((err: unknown) =>
      this.log.warn({ err, client_id: clientId }, 'closing a taken-over client failed'),
    );
  }

  private count(clientId: string): number {
    const since = this.clock.now().getTime() - TAKEOVER_WINDOW_MS;
    const times = (this.recent.get(clientId) ?? []).filter((at) => at > since);
    if (times.length === 0) this.recent.delete(clientId);
    else this.recent.set(clientId, times);
    return times.length;
  }

  private note(clientId: string): void {
    this.count(clientId);
    const times = this.recent.get(clientId) ?? [];
    times.push(this.clock.now().getTime());
    this.recent.set(clientId, times.slice(-Math.max(1, this.settings.limit)));
  }

  private subject(nodeId: string): string {
    return `${this.settings.prefix}.node.${nodeId}.takeover`;
  }
}
