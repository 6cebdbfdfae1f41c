import type { KvEntry } from 'nats';
import type { ClientOwner } from '../core/clients/client-events.js';

/**
 * The key layout of cluster presence: `n.<node id>` in the node bucket (`<prefix>_presence`, TTL three
 * heartbeats) and `c.<client id, base64url>` → {nodeId, epoch} in the client bucket (`<prefix>_clients`, no TTL).
 */
const encoder = new TextEncoder();
export const encode = (value: unknown): Uint8Array => encoder.encode(JSON.stringify(value));
export const clientKey = (clientId: string): string =>
  `c.${Buffer.from(clientId, 'utf8').toString('base64url')}`;
export const clientIdOfKey = (key: string): string =>
  Buffer.from(key.slice('c.'.length), 'base64url').toString('utf8');
export const nodeKey = (nodeId: string): string => `n.${nodeId}`;
export const isPut = (entry: KvEntry | null): entry is KvEntry => entry !== null && entry.operation === 'PUT';

/** The owner a client key names; undefined when deleted or unreadable. */
export function ownerOf(entry: KvEntry | null): ClientOwner | undefined {
  if (!isPut(entry)) return undefined;
  try {
    const value = entry.json<Partial<ClientOwner>>();
    return typeof value.nodeId === 'string' && typeof value.epoch === 'number'
      ? { nodeId: value.nodeId, epoch: value.epoch }
      : undefined;
  } catch {
    return undefined;
  }
}
