import type { KV, KvEntry, QueuedIterator } from 'nats';
import type { ClientOwner } from '../core/clients/client-events.js';
import type { ClientsLog } from '../core/clients/ports.js';
import { clientIdOfKey, ownerOf } from './presence-keys.js';

/** A client key as the watch last saw it. */
export interface KeyedOwner {
  owner: ClientOwner;
  revision: number;
}

/** Wait before watching again after the watch ended (NATS away). */
const RETRY_MS = 1_000;

/**
 * Every client key of the bucket as this node last saw it: a watch of the bucket (the keys there now, then each
 * write and delete) kept in a map, so that finding which node holds a client costs no request to NATS. A fan-out to
 * thousands of other nodes' clients, or a drain following its agents, would otherwise read one key per client.
 * `seen` is told each write made after the watch caught up: a node learns at once that another node took over a
 * client it holds, even when the take-over message is lost. Watches again after the watch ends, until stopped.
 */
export class ClientKeyWatch {
  private readonly owners = new Map<string, KeyedOwner>();
  private caughtUp = false;
  private stopped = false;
  private iterator: QueuedIterator<KvEntry> | undefined;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly kv: KV,
    private readonly seen: (clientId: string, owner: ClientOwner) => void,
    private readonly log: ClientsLog,
  ) {
    void this.follow();
  }

  /**
   * The client's key as last seen (its owner and revision), while the watch is current; undefined when the key is
   * not known (or the watch is not current), so that the caller reads the key itself.
   */
  entry(clientId: string): KeyedOwner | undefined {
    return this.caughtUp ? this.owners.get(clientId) : undefined;
  }

  stop(): void {
    this.stopped = true;
    this.caughtUp = false;
    clearTimeout(this.retry);
    this.iterator?.stop();
  }

  private async follow(): Promise<void> {
    this.owners.clear();
    this.caughtUp = false;
    try {
      const iterator = await this.kv.watch({
        key: 'c.>',
        initializedFn: () => {
          this.caughtUp = !this.stopped;
        },
      });
      this.iterator = iterator;
      if (this.stopped) iterator.stop();
      for await (const entry of iterator) this.take(entry);
    } catch (err) {
      if (!this.stopped) this.log.warn({ err }, 'watching the cluster client keys failed');
    }
    this.caughtUp = false;
    if (this.stopped) return;
    this.retry = setTimeout(() => void this.follow(), RETRY_MS);
    this.retry.unref();
  }

  private take(entry: KvEntry): void {
    const clientId = clientIdOfKey(entry.key);
    const owner = ownerOf(entry);
    if (!owner) {
      this.owners.delete(clientId);
      return;
    }
    this.owners.set(clientId, { owner, revision: entry.revision });
    if (this.caughtUp) this.seen(clientId, owner);
  }
}
