import type { ListQuery } from '@svc/protocol';

/** A credential agents connect with (spec 2.13). The password is kept as given: GET /clients-auth returns it. */
export interface ClientCredential {
  id: string;
  password: string;
}

export type ClientAuthStoreKind = 'static' | 'file' | 'database';

/** Where client credentials live (spec 5.7: exactly one source). */
export interface ClientAuthStore {
  readonly kind: ClientAuthStoreKind;
  get(id: string): Promise<ClientCredential | undefined>;
  /** Filtered, sorted and paginated as the query says; count is before pagination. */
  list(query: ListQuery): Promise<{ data: ClientCredential[]; count: number }>;
  /** Throws a conflict AppError when the id exists. */
  create(credential: ClientCredential): Promise<void>;
  /** False when there was no such id. */
  delete(id: string): Promise<boolean>;
}

/** What the agent gateway tells about connected clients, so a credential in use is not deleted by accident. */
export interface ClientConnections {
  countByAuthId(authId: string): number;
  disconnectByAuthId(authId: string): Promise<void>;
}
