import type { KV, KvEntry, NatsConnection } from 'nats';
import type { ClientEvents, ClientOwner, Unsubscribe } from '../core/clients/client-events.js';
import type { ClientsLog } from '../core/clients/ports.js';

/** What a node announces about itself under `n.<node id>`. */
export interface NodeInfo {
  node_id: string;
  advertise_address: string;
  started_at: string;
  /** When this node last renewed its presence. */
  seen_at: string;
}

/** How long one listing of the node keys may take. */
const KEYS_DEADLINE_MS = 1_000;

const encoder = new TextEncoder();
const encode = (value: unknown): Uint8Array => encoder.encode(JSON.stringify(value));
const clientKey = (clientId: string): string => `c.${Buffer.from(clientId, 'utf8').toString('base64url')}`;
const nodeKey = (nodeId: string): string => `n.${nodeId}`;
const isLive = (entry: KvEntry | null): entry is KvEntry => entry !== null && entry.operation === 'PUT';

function ownerOf(entry: KvEntry | null): ClientOwner | undefined {
  if (!isLive(entry)) return undefined;
  const value = entry.json<Partial<ClientOwner>>();
  return typeof value.nodeId === 'string' && typeof value.epoch === 'number'
    ? { nodeId: value.nodeId, epoch: value.epoch }
    : undefined;
}

/** What presence finds when it writes a client's key and another node's connection is there. */
export interface OwnerChanges {
  /** This node's newer connection replaced `previous` (an older one, on another node). */
  tookOver(clientId: string, previous: ClientOwner, owner: ClientOwner): void;
  /** Another node holds a newer connection of a client this node still holds. */
  lost(clientId: string, owner: ClientOwner): void;
}

export interface PresenceSettings {
  nodeId: string;
  advertiseAddress: string;
  heartbeatMs: number;
  /** KV bucket name. */
  bucket: string;
}

/**
 * Presence in a NATS KV bucket whose TTL is three heartbeats (nats-server 2.9 has no per-key TTL, so every key
 * is put again each heartbeat): `n.<node>` for each live node, `c.<client id, base64url>` → {nodeId, epoch}
 * for each connected client. A client key is written with compare-and-set and the newest epoch wins.
 */
export class Presence {
  private readonly held = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: Unsubscribe[] = [];
  private readonly startedAt = new Date().toISOString();
  private changes: OwnerChanges | undefined;

  private constructor(
    private readonly kv: KV,
    private readonly settings: PresenceSettings,
    private readonly log: ClientsLog,
  ) {}

  static async open(nc: NatsConnection, settings: PresenceSettings, log: ClientsLog): Promise<Presence> {
    const kv = await nc.jetstream().views.kv(settings.bucket, { ttl: settings.heartbeatMs * 3, history: 1 });
    const presence = new Presence(kv, settings, log);
    await presence.beat();
    return presence;
  }

  /** Follows this node's attaches and detaches and renews the keys every heartbeat. */
  start(events: ClientEvents, changes?: OwnerChanges): void {
    this.changes = changes;
    const mine = (owner: ClientOwner) => owner.nodeId === this.settings.nodeId;
    this.unsubscribe = [
      events.subscribe('attached', ({ clientId, owner }) => {
        if (!mine(owner)) return;
        this.held.set(clientId, owner.epoch);
        this.background(this.claim(clientId, owner.epoch), clientId, 'claiming the client in presence');
      }),
      events.subscribe('detached', ({ clientId, owner }) => {
        if (!mine(owner) || this.held.get(clientId) !== owner.epoch) return;
        this.held.delete(clientId);
        this.background(this.release(clientId, owner.epoch), clientId, 'releasing the client in presence');
      }),
    ];
    this.timer = setInterval(() => {
      this.beat().catch((err: unknown) => this.log.warn({ err }, 'renewing the cluster presence failed'));
    }, this.settings.heartbeatMs);
    this.timer.unref();
  }

  /** Puts this node's key at once (NATS came back): other nodes see it live before its keys would expire. */
  renew(): Promise<void> {
    return this.beat();
  }

  /** Which node holds the client now; undefined when none does (or its node went silent). */
  async owner(clientId: string): Promise<ClientOwner | undefined> {
    return ownerOf(await this.kv.get(clientKey(clientId)));
  }

  /** The nodes that renewed their presence within the bucket's TTL. */
  async nodes(): Promise<NodeInfo[]> {
    const keys = await this.nodeKeys();
    const entries = await Promise.all(keys.map((key) => this.kv.get(key)));
    this.lastNodes = entries.filter(isLive).map((entry) => entry.json<NodeInfo>());
    return this.lastNodes;
  }

  /** The nodes as last read (what /status shows while NATS is away). */
  lastNodes: NodeInfo[] = [];

  async liveNodeIds(): Promise<ReadonlySet<string>> {
    return new Set((await this.nodes()).map((node) => node.node_id));
  }

  /**
   * The node keys. Listing the keys of a bucket can wait for ever when a key expires while it is listed (seen with
   * nats-server 2.9), so each attempt has a deadline and is tried again.
   */
  private async nodeKeys(): Promise<string[]> {
    for (let attempt = 1; ; attempt += 1) {
      const listing = await this.kv.keys('n.*');
      const keys: string[] = [];
      let timer: NodeJS.Timeout | undefined;
      const listed = (async () => {
        for await (const key of listing) keys.push(key);
        return true;
      })();
      const late = new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), KEYS_DEADLINE_MS);
      });
      const done = await Promise.race([listed, late]);
      clearTimeout(timer);
      if (done) return keys;
      listing.stop();
      if (attempt === 3)
        throw new Error(`listing the cluster nodes in NATS took over ${KEYS_DEADLINE_MS} ms, 3 times`);
    }
  }

  /** Shutdown: this node and its clients leave presence at once rather than after the TTL. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    for (const stop of this.unsubscribe) stop();
    const held = [...this.held];
    this.held.clear();
    await Promise.allSettled(held.map(([clientId, epoch]) => this.release(clientId, epoch)));
    await this.kv.delete(nodeKey(this.settings.nodeId)).catch(() => undefined);
  }

  /** What this node announces about itself. */
  self(): NodeInfo {
    return {
      node_id: this.settings.nodeId,
      advertise_address: this.settings.advertiseAddress,
      started_at: this.startedAt,
      seen_at: new Date().toISOString(),
    };
  }

  private async beat(): Promise<void> {
    await this.kv.put(nodeKey(this.settings.nodeId), encode(this.self()));
    for (const [clientId, epoch] of [...this.held]) {
      await this.claim(clientId, epoch).catch((err: unknown) =>
        this.log.warn({ err, client_id: clientId }, 'renewing the client presence failed'),
      );
    }
  }

  /** Compare-and-set: writes {this node, epoch} unless a newer connection (elsewhere) holds the key. */
  private async claim(clientId: string, epoch: number): Promise<void> {
    const key = clientKey(clientId);
    const value = encode({ nodeId: this.settings.nodeId, epoch });
    for (let attempt = 0; attempt < 5; attempt += 1) {
      if (this.held.get(clientId) !== epoch) return;
      const entry = await this.kv.get(key);
      const current = ownerOf(entry);
      const elsewhere = current && current.nodeId !== this.settings.nodeId ? current : undefined;
      if (elsewhere && elsewhere.epoch > epoch) {
        this.changes?.lost(clientId, elsewhere);
        return;
      }
      try {
        if (entry === null) await this.kv.create(key, value);
        else await this.kv.update(key, value, entry.revision);
        if (elsewhere) this.changes?.tookOver(clientId, elsewhere, { nodeId: this.settings.nodeId, epoch });
        return;
      } catch {
        // Another writer came first: read again.
      }
    }
  }

  private async release(clientId: string, epoch: number): Promise<void> {
    const key = clientKey(clientId);
    const entry = await this.kv.get(key);
    const current = ownerOf(entry);
    if (!entry || current?.nodeId !== this.settings.nodeId || current.epoch !== epoch) return;
    await this.kv.delete(key, { previousSeq: entry.revision }).catch(() => undefined);
  }

  private background(work: Promise<void>, clientId: string, what: string): void {
    work.catch((err: unknown) => this.log.warn({ err, client_id: clientId }, `${what} failed`));
  }
}
