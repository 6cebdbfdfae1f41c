/**
 * How many clients the cluster's presence names as held by a live node, read straight from NATS (the layout of
 * svcd's cluster/presence-keys.ts: `n.<node>` in `<prefix>_presence`, `c.<client id>` in `<prefix>_clients`). A
 * client whose key is missing, or names a node that is gone, counts as connected nowhere for commands sent
 * through another node, so this should equal the agents connected.
 */
import { connect, type KV } from 'nats';
import type { ClientOwner } from '../../packages/server/src/core/clients/client-events.js';
import { isPut, ownerOf } from '../../packages/server/src/cluster/presence-keys.js';

const READ_TIMEOUT_MS = 30_000;

/** Resolves with `work`, or throws when it takes over 30 s. */
async function within<T>(what: string, work: Promise<T>, stop: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      stop();
      reject(new Error(`${what} took over ${READ_TIMEOUT_MS} ms`));
    }, READ_TIMEOUT_MS);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function liveNodes(kv: KV): Promise<Set<string>> {
  const listing = await kv.keys('n.*');
  const keys: string[] = [];
  await within(
    'listing the node keys',
    (async () => {
      for await (const key of listing) keys.push(key);
    })(),
    () => listing.stop(),
  );
  const entries = await Promise.all(keys.map((key) => kv.get(key)));
  return new Set(entries.filter(isPut).map((entry) => entry.key.slice('n.'.length)));
}

/** The owner each client key names now: one pass over the bucket's last values. */
async function clientOwners(kv: KV): Promise<Map<string, ClientOwner>> {
  const owners = new Map<string, ClientOwner>();
  let initialized: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (initialized = resolve));
  const watch = await kv.watch({ key: 'c.>', initializedFn: () => initialized() });
  void (async () => {
    for await (const entry of watch) {
      const owner = ownerOf(entry);
      if (owner) owners.set(entry.key, owner);
      else owners.delete(entry.key);
    }
  })();
  await within('reading the client keys', done, () => watch.stop());
  watch.stop();
  return owners;
}

/** Counts the client keys of `<prefix>_clients` (svcd's default `svc`) that name a live node. */
export async function presentClients(natsUrl: string, prefix = 'svc'): Promise<number> {
  const nc = await connect({ servers: natsUrl, timeout: 5_000 });
  try {
    // Bind only: never create the buckets or change their settings.
    const js = nc.jetstream();
    const live = await liveNodes(await js.views.kv(`${prefix}_presence`, { bindOnly: true }));
    const owners = await clientOwners(await js.views.kv(`${prefix}_clients`, { bindOnly: true }));
    return [...owners.values()].filter((owner) => live.has(owner.nodeId)).length;
  } finally {
    await nc.close();
  }
}
