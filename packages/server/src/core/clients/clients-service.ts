import { applyListQuery, pickFields, type ListQuery } from '@svc/protocol';
import type { ClientRecord } from './client-record.js';
import { clientNotFound, type ClientRegistry } from './client-registry.js';
import { SortCache, sortByStrings } from './sorted-view.js';

/** The clients API (spec 4.12) over the registry; any authenticated user. */
export class ClientsService {
  private readonly orders = new SortCache();

  constructor(private readonly registry: ClientRegistry) {}

  /**
   * Filters, sorts and pages the cached records. They are kept ordered by id, so the default order needs no sort
   * and every other (stable) sort breaks ties by id; sorted orders are remembered until a record changes, and
   * only the page is copied.
   */
  list(query: ListQuery): { data: Partial<ClientRecord>[]; count: number } {
    const byId = () => this.registry.sortedById();
    const [first] = query.sort;
    let ordered: ClientRecord[] | undefined;
    if (query.sort.length === 1 && first?.field === 'id') {
      ordered = first.direction === 'asc' ? byId() : byId().reverse();
    } else {
      const key = query.sort.map((s) => `${s.direction === 'desc' ? '-' : ''}${s.field}`).join(',');
      ordered = this.orders.get(this.registry.version, key, () => sortByStrings(byId(), query.sort));
    }
    return ordered ? applyListQuery(ordered, { ...query, sort: [] }) : applyListQuery(byId(), query);
  }

  get(id: string, fields?: readonly string[]): Partial<ClientRecord> {
    const record = this.registry.get(id);
    if (!record) throw clientNotFound(id);
    return pickFields(record, fields);
  }

  delete(id: string): Promise<void> {
    return this.registry.delete(id);
  }
}
