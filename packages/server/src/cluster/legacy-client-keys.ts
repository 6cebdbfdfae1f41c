import type { KV } from 'nats';
import type { ClientOwner } from '../core/clients/client-events.js';
import { clientKey, encode, ownerOf } from './presence-keys.js';

/**
 * Client keys as svcd kept them before `<prefix>_clients`: in the node bucket (`<prefix>_presence`, TTL three
 * heartbeats), each put again every heartbeat by its node. While a node of that version is live (a rolling
 * upgrade), a node of this version writes its clients' keys there too, every heartbeat, and looks there for a
 * client it does not find in `<prefix>_clients`, so that nodes of both versions reach each other's agents.
 */
export class LegacyClientKeys {
  constructor(
    private readonly kv: KV,
    private readonly nodeId: string,
  ) {}

  async owner(clientId: string): Promise<ClientOwner | undefined> {
    return ownerOf(await this.kv.get(clientKey(clientId)));
  }

  /**
   * Writes {this node, epoch} with compare-and-set, unless a newer connection on another node holds the key:
   * then resolves with that one.
   */
  async put(clientId: string, epoch: number): Promise<ClientOwner | undefined> {
    const key = clientKey(clientId);
    const value = encode({ nodeId: this.nodeId, epoch });
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const entry = await this.kv.get(key);
      const current = ownerOf(entry);
      if (current && current.nodeId !== this.nodeId && current.epoch > epoch) return current;
      try {
        if (entry === null) await this.kv.create(key, value);
        else await this.kv.update(key, value, entry.revision);
        return undefined;
      } catch {
        // Another writer came first: read again.
      }
    }
    return undefined;
  }

  async release(clientId: string, epoch: number): Promise<void> {
    const key = clientKey(clientId);
    const entry = await this.kv.get(key);
    const current = ownerOf(entry);
    if (!entry || current?.nodeId !== this.nodeId || current.epoch !== epoch) return;
    await this.kv.delete(key, { previousSeq: entry.revision });
  }
}
