import type { KV, NatsConnection } from 'nats';
import type { ClientEvents, ClientOwner, Unsubscribe } from '../core/clients/client-events.js';
import type { ClientsLog } from '../core/clients/ports.js';
import { ClientKeyWatch, type KeyedOwner } from './client-key-watch.js';
import { LegacyClientKeys } from './legacy-client-keys.js';
import { pipelined } from './pipelined.js';
import { clientKey, encode, isPut, nodeKey, ownerOf } from './presence-keys.js';

/** What a node announces about itself under `n.<node id>`. */
/**
 * How long a node found gone counts as gone before its key is read again. Short: a node that comes back (NATS
 * returned, or it restarted) puts its key at once, and commands for its clients must not answer "not connected"
 * for a whole heartbeat after that; a dead node's clients still cost at most four reads a second.
 */
const GONE_RECHECK_MS = 250;

export interface NodeInfo {
  node_id: string;
  advertise_address: string;
  started_at: string;
  /** When this node last renewed its presence. */
  seen_at: string;
  /** The bucket of its client keys; absent from a node of an older version (its client keys are in this bucket). */
  client_keys?: string;
}

/** How long one listing of the node keys may take. */
const KEYS_DEADLINE_MS = 1_000;
/** KV calls in flight when presence writes many client keys at once (after NATS came back, at shutdown). */
const PIPELINE_WIDTH = 64;
/** Deletes of a gone node's client keys in flight at once, and how many between two pauses of FORGET_PAUSE_MS. */
const FORGET_WIDTH = 8;
const FORGET_SLICE = 200;
const FORGET_PAUSE_MS = 100;
/** How long shutdown spends deleting this node's client keys (NATS may be away). */
const CLOSE_DEADLINE_MS = 5_000;

/** What presence finds when it writes a client's key and another node's connection is there. */
export interface OwnerChanges {
  /** This node's newer connection replaced `previous` (an older one, on another live node). */
  tookOver(clientId: string, previous: ClientOwner, owner: ClientOwner): void;
  /** Another node holds a newer connection of a client this node still holds. */
  lost(clientId: string, owner: ClientOwner): void;
  /** A live node other than this one wrote the key of a client this node does not hold: it holds it now. */
  claimedElsewhere(clientId: string, owner: ClientOwner): void;
}

export interface PresenceSettings {
  nodeId: string;
  advertiseAddress: string;
  heartbeatMs: number;
  /** KV bucket of the node keys, whose TTL is three heartbeats (`<prefix>_presence`). */
  bucket: string;
  /** KV bucket of the client keys, without TTL (`<prefix>_clients`). */
  clientsBucket: string;
}

const delay = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms).unref();
  });

/**
 * Presence in two NATS KV buckets. `n.<node>` in a bucket whose TTL is three heartbeats (nats-server 2.9 has no
 * per-key TTL): each node puts its own key every heartbeat, one write whatever the number of its clients.
 * `c.<client id, base64url>` → {nodeId, epoch} in a bucket without TTL, written once per connection with
 * compare-and-set (the newest epoch wins) and deleted when the connection ends. A client key counts only while
 * the node it names is live: the keys of a node that died need no expiry, and one of them can be taken over by
 * any epoch. The live nodes are read again every heartbeat (and by `liveNodeIds()`); a node not among them is
 * looked up by its key before a client key naming it is believed or ignored.
 */
export class Presence {
  private readonly held = new Map<string, number>();
  /** Held clients whose key could not be written: written again on the next heartbeat. */
  private readonly unwritten = new Set<string>();
  /** Nodes seen live since the node keys were last read, and nodes looked up and found gone (when). */
  private live = new Set<string>();
  private readonly gone = new Map<string, number>();
  /** Live nodes of an older version (their client keys in the node bucket): see LegacyClientKeys. */
  private olderNodes = new Set<string>();
  private readonly legacy: LegacyClientKeys;
  /** The put of the node key pending now: a heartbeat due meanwhile does not put it twice. */
  private putting: Promise<void> | undefined;
  /** What a heartbeat does besides the node key, running now: never two at once, never delaying the node key. */
  private catchingUp: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: Unsubscribe[] = [];
  private watch: ClientKeyWatch | undefined;
  private readonly startedAt = new Date().toISOString();
  private changes: OwnerChanges | undefined;
  /** The reading of the node keys under way, shared by its callers, and when the last one started. */
  private reading: Promise<NodeInfo[]> | undefined;
  private lastReadAt: number | undefined;

  private constructor(
    private readonly nodesKv: KV,
    private readonly clientsKv: KV,
    private readonly settings: PresenceSettings,
    private readonly log: ClientsLog,
  ) {
    this.legacy = new LegacyClientKeys(nodesKv, settings.nodeId);
  }

  static async open(nc: NatsConnection, settings: PresenceSettings, log: ClientsLog): Promise<Presence> {
    const js = nc.jetstream();
    const nodesKv = await js.views.kv(settings.bucket, { ttl: settings.heartbeatMs * 3, history: 1 });
    const clientsKv = await js.views.kv(settings.clientsBucket, { history: 1 });
    const presence = new Presence(nodesKv, clientsKv, settings, log);
    await presence.beat();
    return presence;
  }

  /** Follows this node's attaches and detaches, other nodes' claims, and puts the node key every heartbeat. */
  start(events: ClientEvents, changes?: OwnerChanges): void {
    this.changes = changes;
    const mine = (owner: ClientOwner) => owner.nodeId === this.settings.nodeId;
    this.unsubscribe = [
      events.subscribe('attached', ({ clientId, owner }) => {
        if (!mine(owner)) return;
        this.held.set(clientId, owner.epoch);
        this.background(this.claim(clientId, owner.epoch), clientId, 'claiming the client in presence');
        if (this.olderNodes.size > 0)
          this.background(
            this.putLegacy(clientId, owner.epoch),
            clientId,
            'claiming the client (older nodes)',
          );
      }),
      events.subscribe('detached', ({ clientId, owner }) => {
        if (!mine(owner) || this.held.get(clientId) !== owner.epoch) return;
        this.held.delete(clientId);
        this.unwritten.delete(clientId);
        this.background(this.release(clientId, owner.epoch), clientId, 'releasing the client in presence');
        if (this.olderNodes.size > 0)
          this.background(
            this.legacy.release(clientId, owner.epoch),
            clientId,
            'releasing the client (older nodes)',
          );
      }),
    ];
    this.watch = new ClientKeyWatch(
      this.clientsKv,
      (clientId, owner) => this.claimed(clientId, owner),
      this.log,
    );
    this.timer = setInterval(() => {
      if (this.putting)
        this.log.warn({}, 'the previous put of the node key is still pending: not putting again');
      this.beat().catch((err: unknown) => this.log.warn({ err }, 'renewing the cluster presence failed'));
    }, this.settings.heartbeatMs);
    this.timer.unref();
  }

  /**
   * NATS came back: the node key at once, so that other nodes see this node live, and every client key again
   * (the writes made while NATS was away failed, and a new NATS may have lost them). A put still pending from
   * before is not waited for: its request may be lost.
   */
  renew(): Promise<void> {
    for (const clientId of this.held.keys()) this.unwritten.add(clientId);
    return this.beat({ fresh: true });
  }

  /** Which node holds the client now; undefined when none does (or the node its key names is gone). */
  async owner(clientId: string): Promise<ClientOwner | undefined> {
    const current = (await this.clientKeyEntry(clientId))?.owner;
    if (!current) {
      // A node of an older version may hold it (rolling upgrade).
      if (this.olderNodes.size === 0) return undefined;
      const older = await this.legacy.owner(clientId);
      return older && this.olderNodes.has(older.nodeId) ? older : undefined;
    }
    // This node knows what it holds: a key of an earlier connection (or life) of this node holds nothing.
    if (current.nodeId === this.settings.nodeId)
      return this.held.get(clientId) === current.epoch ? current : undefined;
    return (await this.isLive(current.nodeId)) ? current : undefined;
  }

  /**
   * The nodes as read at most `maxAgeMs` ago, else read now: a view (/status) asked many times a second shares
   * one listing of the bucket instead of listing it for every request.
   */
  async recentNodes(maxAgeMs: number): Promise<NodeInfo[]> {
    if (this.lastReadAt !== undefined && Date.now() - this.lastReadAt <= maxAgeMs) return this.lastNodes;
    return this.nodes();
  }

  /** The nodes that renewed their presence within the bucket's TTL; callers meanwhile share one reading. */
  nodes(): Promise<NodeInfo[]> {
    this.reading ??= this.readNodes().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private async readNodes(): Promise<NodeInfo[]> {
    const startedAt = Date.now();
    const keys = await this.nodeKeys();
    const entries = await Promise.all(keys.map((key) => this.nodesKv.get(key)));
    this.lastNodes = entries.filter(isPut).map((entry) => entry.json<NodeInfo>());
    this.live = new Set(this.lastNodes.map((node) => node.node_id));
    this.gone.clear();
    this.olderNodes = new Set(
      this.lastNodes.filter((node) => node.client_keys === undefined).map((node) => node.node_id),
    );
    this.lastReadAt = startedAt;
    return this.lastNodes;
  }

  /** The nodes as last read (what /status shows while NATS is away). */
  lastNodes: NodeInfo[] = [];

  async liveNodeIds(): Promise<ReadonlySet<string>> {
    return new Set((await this.nodes()).map((node) => node.node_id));
  }

  /**
   * Deletes the client keys that still name `nodeId`, a node that left the cluster (they count for nothing
   * already; this keeps the bucket from filling with them). A key another node wrote meanwhile stays.
   */
  async forget(nodeId: string, clientIds: readonly string[]): Promise<void> {
    let failed = 0;
    // Housekeeping while that node's agents reconnect here: a slice at a time, with a pause after each.
    for (let at = 0; at < clientIds.length; at += FORGET_SLICE) {
      if (at > 0) await delay(FORGET_PAUSE_MS);
      const slice = clientIds.slice(at, at + FORGET_SLICE);
      failed += (
        await pipelined(slice, FORGET_WIDTH, async (clientId) => {
          if (nodeId === this.settings.nodeId && this.held.has(clientId)) return;
          const key = await this.clientKeyEntry(clientId);
          if (key?.owner.nodeId !== nodeId) return;
          // A key written meanwhile (the agent connected again) stays: that is what the revision guards.
          await this.clientsKv
            .delete(clientKey(clientId), { previousSeq: key.revision })
            .catch((err: unknown) => {
              if (!/wrong last sequence/i.test(String(err))) throw err;
            });
        })
      ).failed;
    }
    if (failed > 0)
      this.log.warn({ node: nodeId, keys: failed }, 'some client keys of a node that left stay in presence');
  }

  /** The client's key (owner and revision): from the watch, else (not seen there yet) read from NATS. */
  private async clientKeyEntry(clientId: string): Promise<KeyedOwner | undefined> {
    const seen = this.watch?.entry(clientId);
    if (seen) return seen;
    const entry = await this.clientsKv.get(clientKey(clientId));
    const owner = ownerOf(entry);
    return entry && owner ? { owner, revision: entry.revision } : undefined;
  }

  /** Shutdown: this node's clients and then the node leave presence at once. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    for (const stop of this.unsubscribe) stop();
    this.watch?.stop();
    const held = [...this.held];
    this.held.clear();
    this.unwritten.clear();
    const older = this.olderNodes.size > 0;
    await Promise.race([
      pipelined(held, PIPELINE_WIDTH, async ([clientId, epoch]) => {
        await this.release(clientId, epoch);
        if (older) await this.legacy.release(clientId, epoch);
      }),
      delay(CLOSE_DEADLINE_MS),
    ]);
    await this.nodesKv.delete(nodeKey(this.settings.nodeId)).catch(() => undefined);
  }

  /** What this node announces about itself. */
  self(): NodeInfo {
    return {
      node_id: this.settings.nodeId,
      advertise_address: this.settings.advertiseAddress,
      started_at: this.startedAt,
      seen_at: new Date().toISOString(),
      client_keys: this.settings.clientsBucket,
    };
  }

  /**
   * A heartbeat: the node key (resolves once it is put), and in the background, one at a time, the live nodes
   * read again, the client keys that could not be written before, and, while a node of an older version is
   * live, every client key in its layout. A slow listing of the nodes never delays the node key.
   */
  private beat({ fresh = false } = {}): Promise<void> {
    let pending = this.putting;
    if (fresh || pending === undefined) {
      const put: Promise<void> = this.nodesKv
        .put(nodeKey(this.settings.nodeId), encode(this.self()))
        .then(() => undefined)
        .finally(() => {
          if (this.putting === put) this.putting = undefined;
        });
      this.putting = put;
      pending = put;
    }
    this.catchingUp ??= this.catchUp()
      .catch((err: unknown) => this.log.warn({ err }, 'catching up the cluster presence failed'))
      .finally(() => {
        this.catchingUp = undefined;
      });
    return pending;
  }

  private async catchUp(): Promise<void> {
    await this.nodes().catch((err: unknown) => this.log.warn({ err }, 'reading the cluster nodes failed'));
    if (this.olderNodes.size > 0) {
      const { failed } = await pipelined([...this.held], PIPELINE_WIDTH, ([clientId, epoch]) =>
        this.putLegacy(clientId, epoch),
      );
      if (failed > 0) this.log.warn({ clients: failed }, 'client keys for the older nodes not written');
    }
    if (this.unwritten.size === 0) return;
    const retry = [...this.unwritten];
    this.unwritten.clear();
    await pipelined(retry, PIPELINE_WIDTH, async (clientId) => {
      const epoch = this.held.get(clientId);
      if (epoch !== undefined) await this.claim(clientId, epoch);
    });
    if (this.unwritten.size > 0)
      this.log.warn({ clients: this.unwritten.size }, 'client keys not written in presence: trying again');
  }

  /** Whether the node counts as live: among those last read, else by its key (a node just come up). */
  private async isLive(nodeId: string): Promise<boolean> {
    if (nodeId === this.settings.nodeId || this.live.has(nodeId)) return true;
    const goneAt = this.gone.get(nodeId);
    if (goneAt !== undefined && Date.now() - goneAt < Math.min(GONE_RECHECK_MS, this.settings.heartbeatMs))
      return false;
    const up = isPut(await this.nodesKv.get(nodeKey(nodeId)));
    if (up) {
      this.live.add(nodeId);
      this.gone.delete(nodeId);
    } else this.gone.set(nodeId, Date.now());
    return up;
  }

  /** The client's key for nodes of an older version; a newer connection one of them holds closes this one. */
  private async putLegacy(clientId: string, epoch: number): Promise<void> {
    if (this.held.get(clientId) !== epoch) return;
    const newer = await this.legacy.put(clientId, epoch);
    if (newer) this.changes?.lost(clientId, newer);
  }

  /**
   * A client key was written: a newer connection on another node of a client this node holds closes this one; a
   * client this node does not hold is shown held by that node at once (a failed node's agents arriving at the
   * others), not after the next reading of the database. Keys of nodes not known live (the initial values of the
   * watch include a dead node's keys until they are deleted) are left to that reading.
   */
  private claimed(clientId: string, owner: ClientOwner): void {
    if (owner.nodeId === this.settings.nodeId) return;
    const epoch = this.held.get(clientId);
    if (epoch === undefined) {
      if (this.live.has(owner.nodeId)) this.changes?.claimedElsewhere(clientId, owner);
      return;
    }
    if (owner.epoch > epoch) this.changes?.lost(clientId, owner);
  }

  /** Writes the key; one that could not be written is written again on the next heartbeat. */
  private async claim(clientId: string, epoch: number): Promise<void> {
    try {
      if (await this.tryClaim(clientId, epoch)) return;
    } catch (err) {
      if (this.held.get(clientId) === epoch) this.unwritten.add(clientId);
      throw err;
    }
    if (this.held.get(clientId) === epoch) this.unwritten.add(clientId);
  }

  /**
   * Compare-and-set: writes {this node, epoch} unless a newer connection on another live node holds the key.
   * True once settled (written, lost to a newer one, or no longer held); false after five lost races.
   */
  private async tryClaim(clientId: string, epoch: number): Promise<boolean> {
    const key = clientKey(clientId);
    const value = encode({ nodeId: this.settings.nodeId, epoch });
    for (let attempt = 0; attempt < 5; attempt += 1) {
      if (this.held.get(clientId) !== epoch) return true;
      // First as the watch saw the key (a failed node's agents arriving: its keys are known), else read: the
      // compare-and-set refuses a revision the watch had not caught up with, and the next attempt reads.
      const seen = attempt === 0 ? this.watch?.entry(clientId) : undefined;
      const read = seen ? undefined : await this.clientsKv.get(key);
      // undefined: there is no key at all (never written, or purged), which only create() may write.
      const revision = seen?.revision ?? read?.revision;
      const current = seen?.owner ?? ownerOf(read ?? null);
      const elsewhere =
        current && current.nodeId !== this.settings.nodeId && (await this.isLive(current.nodeId))
          ? current
          : undefined;
      if (elsewhere && elsewhere.epoch > epoch) {
        this.changes?.lost(clientId, elsewhere);
        return true;
      }
      try {
        if (revision === undefined) await this.clientsKv.create(key, value);
        else await this.clientsKv.update(key, value, revision);
        if (elsewhere) this.changes?.tookOver(clientId, elsewhere, { nodeId: this.settings.nodeId, epoch });
        return true;
      } catch {
        // Another writer came first: read again.
      }
    }
    return false;
  }

  private async release(clientId: string, epoch: number): Promise<void> {
    const key = clientKey(clientId);
    const entry = await this.clientsKv.get(key);
    const current = ownerOf(entry);
    if (!entry || current?.nodeId !== this.settings.nodeId || current.epoch !== epoch) return;
    await this.clientsKv.delete(key, { previousSeq: entry.revision }).catch(() => undefined);
  }

  /**
   * The node keys. Listing the keys of a bucket can wait for ever when a key expires while it is listed (seen with
   * nats-server 2.9), so each attempt has a deadline and is tried again.
   */
  private async nodeKeys(): Promise<string[]> {
    for (let attempt = 1; ; attempt += 1) {
      const listing = await this.nodesKv.keys('n.*');
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

  private background(work: Promise<void>, clientId: string, what: string): void {
    work.catch((err: unknown) => this.log.warn({ err, client_id: clientId }, `${what} failed`));
  }
}
