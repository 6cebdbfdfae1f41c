import type { ClientGroupParams } from '@svc/protocol';
import type { ClientRecord } from '../clients/client-record.js';
import type { ClientDirectory } from '../clients/client-directory.js';
import type { ClientEvents } from '../clients/client-events.js';
import {
  compileGroupParams,
  matchView,
  sameMatchInput,
  type GroupMatcher,
  type MatchView,
} from './membership.js';

/** One record change as every group sees it. */
interface RecordChange {
  /** The new record's view; 'unchanged': no field a rule reads changed; undefined: the client is gone. */
  view: MatchView | 'unchanged' | undefined;
  wasConnected: boolean;
  isConnected: boolean;
}

const isConnected = (record: ClientRecord | undefined): boolean => record?.connection_state === 'connected';

/** Member sets kept, one per group version in use: far more than groups people define. */
const DEFAULT_MAX_GROUPS = 1_000;

/** The members of one group version (its params), kept right one client change at a time. */
export class GroupMembers {
  private readonly ids = new Set<string>();
  private connectedCount = 0;
  /** The members in client id order, valid while `orderedFrom` is the directory's current id order. */
  private ordered: readonly string[] | undefined;
  private orderedFrom: readonly string[] | undefined;

  constructor(
    readonly matches: GroupMatcher,
    records: readonly ClientRecord[],
    idsInOrder: readonly string[],
  ) {
    const ordered: string[] = [];
    for (const record of records) {
      if (matches(matchView(record))) {
        this.ids.add(record.id);
        ordered.push(record.id);
        if (isConnected(record)) this.connectedCount += 1;
      }
    }
    this.ordered = ordered;
    this.orderedFrom = idsInOrder;
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  /** How many members are connected. */
  get connected(): number {
    return this.connectedCount;
  }

  /** Every member id, in no particular order. */
  all(): IterableIterator<string> {
    return this.ids.values();
  }

  /** The member ids in `idsInOrder`'s order (the directory's, as GET /clients sorts). Do not modify. */
  inOrder(idsInOrder: readonly string[]): readonly string[] {
    if (this.ordered === undefined || this.orderedFrom !== idsInOrder) {
      this.ordered = idsInOrder.filter((id) => this.ids.has(id));
      this.orderedFrom = idsInOrder;
    }
    return this.ordered;
  }

  /** Follows a changed record: puts the client in or out and counts its connection. */
  follow(id: string, change: RecordChange): void {
    const was = this.ids.has(id);
    const is = change.view === 'unchanged' ? was : change.view !== undefined && this.matches(change.view);
    if (was && change.wasConnected) this.connectedCount -= 1;
    if (is && change.isConnected) this.connectedCount += 1;
    if (is === was) return;
    if (is) this.ids.add(id);
    else this.ids.delete(id);
    this.ordered = undefined;
  }
}

/**
 * The members of the groups in use, computed over every client once per group version and then followed: a
 * changed client record is matched against each group once, instead of every client against every group on each
 * read. Keyed by params, so a group changed on another svcd node (read from the database on every request) gets
 * a fresh member set; the client directory is the source, so this is a cache any node rebuilds by itself.
 */
export class GroupMemberIndex {
  /** In least-recently-used order: a use moves a group to the end, the first is dropped when full. */
  private readonly groups = new Map<string, GroupMembers>();
  /** Each client id's position in `ranksOf`, for the directory's id order of that time. */
  private ranks: { of: readonly string[]; rank: Map<string, number> } | undefined;

  constructor(
    private readonly directory: ClientDirectory,
    events: ClientEvents,
    private readonly maxGroups = DEFAULT_MAX_GROUPS,
  ) {
    // Synchronous and in order: a member set follows one record change at a time.
    events.subscribe('recordChanged', ({ clientId, before, after }) =>
      this.recordChanged(clientId, before, after),
    );
    events.subscribe('recordsReloaded', () => this.recordsReloaded());
  }

  /** The members of the group of these params. */
  of(params: ClientGroupParams): GroupMembers {
    const key = paramsKey(params);
    let members = this.groups.get(key);
    if (members) {
      this.groups.delete(key);
    } else {
      members = new GroupMembers(
        compileGroupParams(params),
        this.directory.sortedById(),
        this.directory.idsInOrder(),
      );
      if (this.groups.size >= this.maxGroups) {
        const oldest = this.groups.keys().next();
        if (!oldest.done) this.groups.delete(oldest.value);
      }
    }
    this.groups.set(key, members);
    return members;
  }

  /** The clients in any of these groups, in `idsInOrder`'s order (the directory's), each once. */
  unionInOrder(groups: readonly { all(): Iterable<string> }[], idsInOrder: readonly string[]): string[] {
    if (this.ranks?.of !== idsInOrder) {
      this.ranks = { of: idsInOrder, rank: new Map(idsInOrder.map((id, n) => [id, n])) };
    }
    const { rank } = this.ranks;
    // Marks by position: no set of ids to grow, and the result comes out in order.
    const marks = new Uint8Array(idsInOrder.length);
    for (const members of groups) {
      for (const id of members.all()) {
        const n = rank.get(id);
        if (n !== undefined) marks[n] = 1;
      }
    }
    const ids: string[] = [];
    for (let n = 0; n < marks.length; n++) if (marks[n] === 1) ids.push(idsInOrder[n] as string);
    return ids;
  }

  /** Stops following a group version that is no longer stored (another group may share it: it is rebuilt then). */
  drop(params: ClientGroupParams): void {
    this.groups.delete(paramsKey(params));
  }

  /** How many group versions are followed (for tests). */
  get size(): number {
    return this.groups.size;
  }

  recordChanged(id: string, before: ClientRecord | undefined, after: ClientRecord | undefined): void {
    if (this.groups.size === 0) return;
    const unchanged = before !== undefined && after !== undefined && sameMatchInput(before, after);
    const change: RecordChange = {
      view: unchanged ? 'unchanged' : after && matchView(after),
      wasConnected: isConnected(before),
      isConnected: isConnected(after),
    };
    if (unchanged && change.wasConnected === change.isConnected) return;
    for (const members of this.groups.values()) members.follow(id, change);
  }

  recordsReloaded(): void {
    this.groups.clear();
  }
}

/** Keys by params object: the repository hands out one object per stored params text. */
const keys = new WeakMap<ClientGroupParams, string>();

const paramsKey = (params: ClientGroupParams): string => {
  let key = keys.get(params);
  if (key === undefined) {
    key = JSON.stringify(params);
    keys.set(params, key);
  }
  return key;
};
