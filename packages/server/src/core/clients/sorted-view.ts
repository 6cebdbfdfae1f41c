import type { ListSort } from '@svc/protocol';
import type { ClientRecord } from './client-record.js';

const codeUnitCompare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Sorts records (given in id order) by string fields the way the list grammar does — case-insensitive, then
 * case-sensitive, ties kept in id order — with each key lower-cased once instead of in every comparison.
 * Returns undefined when a sort field holds a non-string, leaving those cases to the grammar's general sort.
 */
export function sortByStrings(
  records: readonly ClientRecord[],
  sort: readonly ListSort[],
): ClientRecord[] | undefined {
  const rows: { record: ClientRecord; raw: string[]; lower: string[] }[] = [];
  for (const record of records) {
    const raw: string[] = [];
    for (const { field } of sort) {
      const value = (record as unknown as Record<string, unknown>)[field];
      if (typeof value !== 'string') return undefined;
      raw.push(value);
    }
    rows.push({ record, raw, lower: raw.map((v) => v.toLowerCase()) });
  }
  const signs = sort.map((s) => (s.direction === 'desc' ? -1 : 1));
  rows.sort((x, y) => {
    for (let i = 0; i < signs.length; i++) {
      const c =
        codeUnitCompare(x.lower[i] ?? '', y.lower[i] ?? '') ||
        codeUnitCompare(x.raw[i] ?? '', y.raw[i] ?? '');
      if (c !== 0) return c * (signs[i] ?? 1);
    }
    return 0;
  });
  return rows.map((r) => r.record);
}

/** Remembers the last few sorted orders until the records change. */
export class SortCache {
  private version = -1;
  private readonly orders = new Map<string, ClientRecord[]>();

  constructor(private readonly capacity = 8) {}

  get(version: number, key: string, compute: () => ClientRecord[] | undefined): ClientRecord[] | undefined {
    if (version !== this.version) {
      this.orders.clear();
      this.version = version;
    }
    const hit = this.orders.get(key);
    if (hit) return hit;
    const order = compute();
    if (order) {
      if (this.orders.size >= this.capacity) this.orders.clear();
      this.orders.set(key, order);
    }
    return order;
  }
}
