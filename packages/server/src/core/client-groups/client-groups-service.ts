import {
  pickFields,
  type ClientGroup,
  type CreateClientGroupBody,
  type ListQuery,
  type UpdateClientGroupBody,
} from '@svc/protocol';
import { BoundedMap } from '../bounded-map.js';
import type { ClientRecord } from '../clients/client-record.js';
import type { ClientRegistry } from '../clients/client-registry.js';
import type { GroupClassifier } from '../clients/ports.js';
import { groupErrors } from './group-errors.js';
import { compileGroupParams, matchView, type GroupMatcher } from './membership.js';
import type { ClientGroupRepository, StoredClientGroup } from './ports.js';

/** Compiled matchers kept, keyed by a group's params (its version): far more than groups in use. */
const MATCHER_CACHE_SIZE = 10_000;

/** Member lists kept until any client record changes (registry version), for this many group versions. */
const MEMBERS_CACHE_SIZE = 1_000;

/** Fields that need the members computed. */
const MEMBER_FIELDS = ['client_ids', 'num_clients', 'num_clients_connected'];

/**
 * Client groups (spec 2.11, 4.11). Groups are stored in the database (the truth, shared by every node); members
 * are computed on each read from the registry's cached client records, so a client whose tags change moves in or
 * out at once. A member is any client svcd knows, connected or not (as OpenRPort: "active" = not purged).
 */
export class ClientGroupsService implements GroupClassifier {
  private readonly matchers = new BoundedMap<string, GroupMatcher>(MATCHER_CACHE_SIZE);
  private readonly members = new BoundedMap<string, { version: number; records: ClientRecord[] }>(
    MEMBERS_CACHE_SIZE,
  );

  constructor(
    private readonly repository: ClientGroupRepository,
    private readonly registry: ClientRegistry,
  ) {}

  async list(query: ListQuery): Promise<{ data: Partial<ClientGroup>[]; count: number }> {
    const { data, count } = await this.repository.list(query);
    const withMembers = wantsMembers(query.fields);
    const everyone = this.everyone();
    return {
      data: data.map((group) => pickFields(this.present(group, withMembers, everyone), query.fields)),
      count,
    };
  }

  async get(id: string, fields?: readonly string[]): Promise<Partial<ClientGroup>> {
    const group = await this.repository.get(id);
    if (!group) throw groupErrors.notFound(id);
    return pickFields(this.present(group, wantsMembers(fields)), fields);
  }

  async create(body: CreateClientGroupBody): Promise<ClientGroup> {
    const group: StoredClientGroup = { id: body.id, description: body.description, params: body.params };
    await this.repository.insert(group);
    return this.present(group, true);
  }

  async update(id: string, body: UpdateClientGroupBody): Promise<ClientGroup> {
    if (body.id !== undefined && body.id !== id) throw groupErrors.idMismatch(id, body.id);
    const group: StoredClientGroup = { id, description: body.description, params: body.params };
    if (!(await this.repository.update(group))) throw groupErrors.notFound(id);
    return this.present(group, true);
  }

  async delete(id: string): Promise<void> {
    if (!(await this.repository.delete(id))) throw groupErrors.notFound(id);
  }

  /**
   * The ids of the clients in any of these groups (multi-client commands' `group_ids`): deduplicated, in client
   * id order (as GET /clients sorts), connected or not. An unknown group id is a 404 naming it.
   */
  async membersOf(groupIds: readonly string[]): Promise<string[]> {
    const wanted = [...new Set(groupIds)];
    if (wanted.length === 0) return [];
    const groups = await this.repository.getMany(wanted);
    const found = new Set(groups.map((g) => g.id));
    const missing = wanted.find((id) => !found.has(id));
    if (missing !== undefined) throw groupErrors.notFound(missing);
    const everyone = this.everyone();
    const [first] = groups;
    if (groups.length === 1 && first) return this.memberRecords(first, everyone).map((r) => r.id);
    // Member lists still valid are reused; the other groups are matched in one pass that stops at a client's first
    // matching group (a per-group pass would test every client against every group).
    const known = new Set<string>();
    const matchers: GroupMatcher[] = [];
    for (const group of groups) {
      const cached = this.cachedMembers(group);
      if (cached) for (const record of cached) known.add(record.id);
      else matchers.push(this.matcherOf(group));
    }
    const ids: string[] = [];
    for (const record of everyone()) {
      if (known.has(record.id)) {
        ids.push(record.id);
        continue;
      }
      const view = matchView(record);
      for (const matches of matchers) {
        if (matches(view)) {
          ids.push(record.id);
          break;
        }
      }
    }
    return ids;
  }

  /** For GET /clients: a function giving the ids of the groups a client is in, in group id order. */
  async classifier(): Promise<(record: ClientRecord) => string[]> {
    const groups = await this.repository.all();
    groups.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const matchers = groups.map((g) => ({ id: g.id, matches: this.matcherOf(g) }));
    return (record) => {
      const view = matchView(record);
      return matchers.filter((g) => g.matches(view)).map((g) => g.id);
    };
  }

  private matcherOf(group: StoredClientGroup, key = JSON.stringify(group.params)): GroupMatcher {
    let matcher = this.matchers.get(key);
    if (!matcher) {
      matcher = compileGroupParams(group.params);
      this.matchers.set(key, matcher);
    }
    return matcher;
  }

  /** Every record in id order, read at most once per request. */
  private everyone(): () => readonly ClientRecord[] {
    let records: readonly ClientRecord[] | undefined;
    return () => (records ??= this.registry.sortedById());
  }

  /** The group's member records in id order; kept until a client record changes. */
  private memberRecords(group: StoredClientGroup, everyone = this.everyone()): ClientRecord[] {
    const cached = this.cachedMembers(group);
    if (cached) return cached;
    const key = JSON.stringify(group.params);
    const version = this.registry.version;
    const matches = this.matcherOf(group, key);
    const records = everyone().filter((record) => matches(matchView(record)));
    this.members.set(key, { version, records });
    return records;
  }

  /** The group's member list when no client record has changed since it was computed. */
  private cachedMembers(group: StoredClientGroup): ClientRecord[] | undefined {
    const cached = this.members.get(JSON.stringify(group.params));
    return cached?.version === this.registry.version ? cached.records : undefined;
  }

  private present(group: StoredClientGroup, withMembers: boolean, everyone = this.everyone()): ClientGroup {
    const records = withMembers ? this.memberRecords(group, everyone) : [];
    let connected = 0;
    for (const record of records) if (record.connection_state === 'connected') connected += 1;
    return {
      id: group.id,
      description: group.description,
      params: group.params,
      client_ids: records.map((r) => r.id),
      num_clients: records.length,
      num_clients_connected: connected,
    };
  }
}

const wantsMembers = (fields: readonly string[] | undefined): boolean =>
  fields === undefined || fields.some((f) => MEMBER_FIELDS.includes(f));
