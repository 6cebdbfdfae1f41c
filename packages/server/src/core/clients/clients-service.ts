import { applyListQuery, pickFields, type ListQuery } from '@svc/protocol';
import { GROUPS_FIELD } from './client-list.js';
import type { ClientRecord } from './client-record.js';
import { clientNotFound, type ClientDirectory } from './client-directory.js';
import type { GroupClassifier } from './ports.js';
import { SortCache, sortByStrings } from './sorted-view.js';
import { ClientScope } from '../access/client-scope.js';

/** A record as listed: the stored fields plus, when asked for, the computed `groups`. */
export type ListedClient = ClientRecord & { groups?: string[] };

const noGroups: GroupClassifier = { classifier: () => Promise.resolve(() => []) };

/** The clients API (spec 4.12) over the client directory; any authenticated user. */
export class ClientsService {
  private readonly orders = new SortCache();
  /** Each scope's records in id order, until a record changes (a scope object lives as long as its access). */
  private readonly scoped = new WeakMap<ClientScope, { version: number; records: ClientRecord[] }>();

  constructor(
    private readonly directory: ClientDirectory,
    private readonly groups: GroupClassifier = noGroups,
  ) {}

  /**
   * Filters, sorts and pages the cached records. They are kept ordered by id, so the default order needs no sort
   * and every other (stable) sort breaks ties by id; sorted orders are remembered until a record changes, and
   * only the page is copied. Group membership is computed only when `groups` is filtered on or asked for.
   * A limited scope lists only its clients (its member ids are kept in id order by the client groups' index).
   */
  async list(
    query: ListQuery,
    scope: ClientScope = ClientScope.ALL,
  ): Promise<{ data: Partial<ListedClient>[]; count: number }> {
    const byId = scope.limited ? () => this.inScope(scope) : () => this.directory.sortedById();
    const [first] = query.sort;
    let ordered: readonly ClientRecord[] | undefined;
    if (query.sort.length === 1 && first?.field === 'id') {
      ordered = first.direction === 'asc' ? byId() : [...byId()].reverse();
    } else {
      const key = query.sort.map((s) => `${s.direction === 'desc' ? '-' : ''}${s.field}`).join(',');
      ordered = this.orders.get(this.directory.version, key, () =>
        sortByStrings(this.directory.sortedById(), query.sort),
      );
      if (ordered && scope.limited) ordered = ordered.filter((record) => scope.has(record.id));
    }
    const needsGroups =
      query.fields?.includes(GROUPS_FIELD) === true ||
      query.filters.some((f) => f.fields.includes(GROUPS_FIELD));
    if (!needsGroups) {
      return ordered ? applyListQuery(ordered, { ...query, sort: [] }) : applyListQuery(byId(), query);
    }
    const groupsOf = await this.groups.classifier();
    const memo = new Map<ClientRecord, string[]>();
    const accessor = (record: ClientRecord, field: string): unknown => {
      if (field !== GROUPS_FIELD) return (record as unknown as Record<string, unknown>)[field];
      let ids = memo.get(record);
      if (!ids) {
        ids = groupsOf(record);
        memo.set(record, ids);
      }
      return ids;
    };
    const { fields, ...rest } = query;
    const page = ordered
      ? applyListQuery(ordered, { ...rest, sort: [] }, accessor)
      : applyListQuery(byId(), rest, accessor);
    return {
      data: page.data.map((record) =>
        pickFields(
          { ...(record as ClientRecord), groups: accessor(record as ClientRecord, GROUPS_FIELD) as string[] },
          fields,
        ),
      ),
      count: page.count,
    };
  }

  /** The scope's records in id order; shared until a record changes, so callers must not modify it. */
  private inScope(scope: ClientScope): ClientRecord[] {
    const { version } = this.directory;
    const cached = this.scoped.get(scope);
    if (cached?.version === version) return cached.records;
    const records: ClientRecord[] = [];
    for (const id of scope.idsInOrder(this.directory.idsInOrder())) {
      const record = this.directory.get(id);
      if (record) records.push(record);
    }
    this.scoped.set(scope, { version, records });
    return records;
  }

  async get(id: string, fields?: readonly string[]): Promise<Partial<ListedClient>> {
    const record = this.directory.get(id);
    if (!record) throw clientNotFound(id);
    if (!fields?.includes(GROUPS_FIELD)) return pickFields(record, fields);
    const groupsOf = await this.groups.classifier();
    return pickFields({ ...record, groups: groupsOf(record) }, fields);
  }

  delete(id: string): Promise<void> {
    return this.directory.delete(id);
  }
}
