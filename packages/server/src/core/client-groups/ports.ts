import type { ClientGroupParams, ListQuery } from '@svc/protocol';

/** A group as stored: its rules, without the computed members. */
export interface StoredClientGroup {
  id: string;
  description: string;
  params: ClientGroupParams;
}

/** Persistence of client groups; every engine stores the same record. */
export interface ClientGroupRepository {
  /** Throws AppError conflict (ERR_CLIENT_GROUP_EXISTS) when the id is taken. */
  insert(group: StoredClientGroup): Promise<void>;
  /** false when there is no such group. */
  update(group: StoredClientGroup): Promise<boolean>;
  /** false when there is no such group. */
  delete(id: string): Promise<boolean>;
  get(id: string): Promise<StoredClientGroup | undefined>;
  /** The groups of these ids that exist (any order). */
  getMany(ids: readonly string[]): Promise<StoredClientGroup[]>;
  /** Every group (for the computed `groups` of clients). */
  all(): Promise<StoredClientGroup[]>;
  /** Filtered (id, description), sorted and paged by the list grammar; count before paging. */
  list(query: ListQuery): Promise<{ data: StoredClientGroup[]; count: number }>;
}
