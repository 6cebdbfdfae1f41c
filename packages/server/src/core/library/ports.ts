import type { LibraryScript, ListQuery } from '@svc/protocol';

/** Persistence of the script library; every engine stores the same record. */
export interface LibraryScriptRepository {
  /** Throws `libraryErrors.nameTaken` when another script has the name. */
  insert(script: LibraryScript): Promise<void>;
  get(id: string): Promise<LibraryScript | undefined>;
  /**
   * Replaces every field of the script with that id but id and created_* (those stay);
   * false for an unknown id. Throws `libraryErrors.nameTaken` when another script has the name.
   */
  replace(script: LibraryScript): Promise<boolean>;
  /** False for an unknown id. */
  delete(id: string): Promise<boolean>;
  /** Filtered, sorted and paged by the list grammar; count before paging. */
  list(query: ListQuery): Promise<{ data: LibraryScript[]; count: number }>;
}
