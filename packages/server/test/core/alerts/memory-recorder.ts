import { applyListQuery, type AlertDelivery, type ListQuery } from '@svc/protocol';
import type { DeliveryRecorder, NewAlertDelivery } from '../../../src/core/alerts/ports.js';

/** The delivery log in memory, for tests of the dispatcher and the rules (the real one is in the database). */
export class MemoryRecorder implements DeliveryRecorder {
  private readonly entries: AlertDelivery[] = [];

  add(entry: NewAlertDelivery): void {
    this.entries.push({ id: this.entries.length + 1, ...entry, node: 'test-node' });
  }

  all(): readonly AlertDelivery[] {
    return this.entries;
  }

  list(query: ListQuery): Promise<{ data: AlertDelivery[]; count: number }> {
    const { data, count } = applyListQuery(this.entries, query);
    return Promise.resolve({ data: data as AlertDelivery[], count });
  }
}
