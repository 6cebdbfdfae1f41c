/**
 * How many client keys the cluster's presence bucket holds, read straight from NATS (the layout of svcd's
 * cluster/presence.ts: `c.<client id>` per connected client, `n.<node>` per node). A client whose key has expired
 * counts as connected nowhere for commands sent through another node, so this should equal the agents connected.
 */
import { connect } from 'nats';

const LIST_TIMEOUT_MS = 30_000;

/** Counts the distinct `c.*` keys of `bucket` (svcd's default `svc_presence`); throws when listing takes over 30 s. */
export async function presentClients(natsUrl: string, bucket = 'svc_presence'): Promise<number> {
  const nc = await connect({ servers: natsUrl, timeout: 5_000 });
  try {
    // Bind only: never create the bucket or change its settings.
    const kv = await nc.jetstream().views.kv(bucket, { bindOnly: true });
    const listing = await kv.keys('c.*');
    // A key renewed while the listing runs comes again: count each once.
    const keys = new Set<string>();
    let timer: NodeJS.Timeout | undefined;
    const listed = (async () => {
      for await (const key of listing) keys.add(key);
      return true;
    })();
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), LIST_TIMEOUT_MS);
    });
    const done = await Promise.race([listed, late]);
    clearTimeout(timer);
    if (!done) {
      listing.stop();
      throw new Error(`listing the presence keys in ${bucket} took over ${LIST_TIMEOUT_MS} ms`);
    }
    return keys.size;
  } finally {
    await nc.close();
  }
}
