import { KvWatchInclude, type KV, type KvEntry, type QueuedIterator } from 'nats';
import type { ClientOwner } from '../core/clients/client-events.js';
import type { ClientsLog } from '../core/clients/ports.js';
import { clientIdOfKey, ownerOf } from './presence-keys.js';

/** Wait before watching again after the watch ended (NATS away). */
const RETRY_MS = 1_000;

/**
 * Follows the writes of client keys made from now on (not the keys already there) and tells `seen` each new
 * owner: a node learns at once that another node took over a client it holds, even when the take-over message
 * is lost. Watches again after the watch ends, until stopped.
 */
export function watchClientKeys(
  kv: KV,
  seen: (clientId: string, owner: ClientOwner) => void,
  log: ClientsLog,
): { stop(): void } {
  let stopped = false;
  let iterator: QueuedIterator<KvEntry> | undefined;
  let retry: NodeJS.Timeout | undefined;
  const follow = async (): Promise<void> => {
    try {
      iterator = await kv.watch({ key: 'c.>', include: KvWatchInclude.UpdatesOnly, ignoreDeletes: true });
      if (stopped) iterator.stop();
      for await (const entry of iterator) {
        const owner = ownerOf(entry);
        if (owner) seen(clientIdOfKey(entry.key), owner);
      }
    } catch (err) {
      if (!stopped) log.warn({ err }, 'watching the cluster client keys failed');
    }
    if (stopped) return;
    retry = setTimeout(() => void follow(), RETRY_MS);
    retry.unref();
  };
  void follow();
  return {
    stop() {
      stopped = true;
      clearTimeout(retry);
      iterator?.stop();
    },
  };
}
