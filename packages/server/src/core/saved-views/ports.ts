import type { SavedViewPage } from '@svc/protocol';

/** A saved view as stored; `id` is unique over all users, `name` per user. */
export interface SavedViewRecord {
  id: string;
  username: string;
  name: string;
  page: SavedViewPage;
  search: string;
  columns: string[];
  sort: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface SavedViewChanges {
  name?: string;
  search?: string;
  columns?: string[];
  sort?: string;
  updatedAt: Date;
}

/** Where saved views live: svcd's own database, whichever user store is configured. */
export interface SavedViewRepository {
  /** Throws `savedViewErrors.nameTaken` when the user has a view of that name; an id clash is an answer. */
  insert(view: SavedViewRecord): Promise<'inserted' | 'id-taken'>;
  listOf(username: string): Promise<SavedViewRecord[]>;
  countOf(username: string): Promise<number>;
  find(username: string, id: string): Promise<SavedViewRecord | undefined>;
  /** The changed view, or undefined when the user has none with that id; a name clash throws nameTaken. */
  update(username: string, id: string, changes: SavedViewChanges): Promise<SavedViewRecord | undefined>;
  delete(username: string, id: string): Promise<boolean>;
}
