import {
  CLIENT_GROUP_PREVIEW_LIMIT,
  pickFields,
  type ClientGroup,
  type ClientGroupParams,
  type ClientGroupPreview,
  type CreateClientGroupBody,
  type ListQuery,
  type UpdateClientGroupBody,
} from '@svc/protocol';
import type { ClientRecord } from '../clients/client-record.js';
import type { ClientDirectory } from '../clients/client-directory.js';
import type { ClientEvents } from '../clients/client-events.js';
import type { GroupClassifier } from '../clients/ports.js';
import type { MemberSet, ScopeMembers } from '../access/ports.js';
import { groupErrors } from './group-errors.js';
import { GroupMemberIndex, type GroupMembers } from './member-index.js';
import { compileGroupParams, matchView } from './membership.js';
import type { ClientGroupRepository, StoredClientGroup } from './ports.js';

/** Fields that need the members computed. */
const MEMBER_FIELDS = ['client_ids', 'num_clients', 'num_clients_connected'];

/**
 * Client groups (spec 2.11, 4.11). Groups are stored in the database (the truth, shared by every node) and read
 * on each request; their members come from the client directory's records through a member index that
 * follows every record change, so a client whose tags change moves in or out at once. A member is any client
 * svcd knows, connected or not (as OpenRPort: "active" = not purged).
 */
export class ClientGroupsService implements GroupClassifier, ScopeMembers {
  private readonly index: GroupMemberIndex;

  constructor(
    private readonly repository: ClientGroupRepository,
    private readonly directory: ClientDirectory,
    events: ClientEvents,
  ) {
    this.index = new GroupMemberIndex(directory, events);
  }

  async list(query: ListQuery): Promise<{ data: Partial<ClientGroup>[]; count: number }> {
    const { data, count } = await this.repository.list(query);
    const withMembers = wantsMembers(query.fields);
    return {
      data: data.map((group) => pickFields(this.present(group, withMembers), query.fields)),
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
    const before = await this.repository.get(id);
    if (!(await this.repository.update(group))) throw groupErrors.notFound(id);
    if (before) this.index.drop(before.params);
    return this.present(group, true);
  }

  async delete(id: string): Promise<void> {
    const before = await this.repository.get(id);
    if (!(await this.repository.delete(id))) throw groupErrors.notFound(id);
    if (before) this.index.drop(before.params);
  }

  /**
   * The clients unsaved params would hold (the console's live preview while a rule is edited): matched once over
   * the current records, without entering the member index (a preview per keystroke must not fill its cache).
   */
  preview(params: ClientGroupParams): ClientGroupPreview {
    const matches = compileGroupParams(params);
    const preview: ClientGroupPreview = { num_clients: 0, num_clients_connected: 0, clients: [] };
    for (const record of this.directory.sortedById()) {
      if (!matches(matchView(record))) continue;
      preview.num_clients += 1;
      if (record.connection_state === 'connected') preview.num_clients_connected += 1;
      if (preview.clients.length < CLIENT_GROUP_PREVIEW_LIMIT) {
        const { id, name, hostname, connection_state } = record;
        preview.clients.push({ id, name, hostname, connection_state });
      }
    }
    return preview;
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
    const order = this.directory.idsInOrder();
    const [first] = groups;
    if (groups.length === 1 && first) return [...this.index.of(first.params).inOrder(order)];
    return this.index.unionInOrder(
      groups.map((g) => this.index.of(g.params)),
      order,
    );
  }

  /** Client scopes (core/access): the member sets of the groups of these ids that exist. */
  async memberSets(groupIds: readonly string[]): Promise<MemberSet[]> {
    if (groupIds.length === 0) return [];
    const groups = await this.repository.getMany([...new Set(groupIds)]);
    return groups.map((g) => this.index.of(g.params));
  }

  unionInOrder(sets: readonly MemberSet[], idsInOrder: readonly string[]): string[] {
    return this.index.unionInOrder(sets, idsInOrder);
  }

  /** For GET /clients: a function giving the ids of the groups a client is in, in group id order. */
  async classifier(): Promise<(record: ClientRecord) => string[]> {
    const groups = await this.repository.all();
    groups.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const members = groups.map((g) => ({ id: g.id, members: this.index.of(g.params) }));
    let calls = 0;
    let byClient: { version: number; groups: Map<string, string[]> } | undefined;
    return (record) => {
      // The member sets hold the directory's current records; a record read earlier is matched as it was.
      if (this.directory.get(record.id) !== record) {
        const view = matchView(record);
        return members.filter((g) => g.members.matches(view)).map((g) => g.id);
      }
      calls += 1;
      if (calls <= DIRECT_CLASSIFY_CALLS) {
        return members.filter((g) => g.members.has(record.id)).map((g) => g.id);
      }
      // Listing many clients: one pass over the member sets, instead of every group's set for every client.
      if (byClient?.version !== this.directory.version) {
        byClient = { version: this.directory.version, groups: groupsByClient(members) };
      }
      return byClient.groups.get(record.id) ?? [];
    };
  }

  private present(group: StoredClientGroup, withMembers: boolean): ClientGroup {
    const members = withMembers ? this.index.of(group.params) : undefined;
    // A copy: the cached list is shared.
    const ids = members ? [...members.inOrder(this.directory.idsInOrder())] : [];
    return {
      id: group.id,
      description: group.description,
      params: group.params,
      client_ids: ids,
      num_clients: ids.length,
      num_clients_connected: members?.connected ?? 0,
    };
  }
}

/** Clients classified one by one before the classifier turns the member sets around (see `classifier`). */
const DIRECT_CLASSIFY_CALLS = 16;

/** Each member's group ids, in the groups' order (shared lists: callers only read them). */
function groupsByClient(groups: readonly { id: string; members: GroupMembers }[]): Map<string, string[]> {
  const byClient = new Map<string, string[]>();
  for (const group of groups) {
    for (const id of group.members.all()) {
      const ids = byClient.get(id);
      if (ids) ids.push(group.id);
      else byClient.set(id, [group.id]);
    }
  }
  return byClient;
}

const wantsMembers = (fields: readonly string[] | undefined): boolean =>
  fields === undefined || fields.some((f) => MEMBER_FIELDS.includes(f));
