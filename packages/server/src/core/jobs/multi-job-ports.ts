import type { ListQuery, MultiJobSummary } from '@svc/protocol';

/** Persistence of multi-client jobs; their children live in the JobRepository. */
export interface MultiJobRepository {
  insert(job: MultiJobSummary): Promise<void>;
  /**
   * Without `withTargets` the targeting (client_ids, group_ids, tags, labels) is not read and comes back null:
   * for a run on many clients it is the bulk of the record.
   */
  get(jid: string, withTargets?: boolean): Promise<MultiJobSummary | undefined>;
  list(query: ListQuery): Promise<{ data: MultiJobSummary[]; count: number }>;
}

/** A client as targeting sees it. */
export interface TargetClient {
  id: string;
  name: string;
  connected: boolean;
  tags: readonly string[];
  labels: Readonly<Record<string, string>>;
}

/** The clients a multi-client job may target. */
export interface TargetClients {
  get(id: string): TargetClient | undefined;
  /** Every known client, connected or not, in a stable order. */
  all(): Iterable<TargetClient>;
}

/**
 * Client groups (spec 4.11), implemented by the client-groups feature (ClientGroupsService). `membersOf` gives the
 * ids of the groups' clients, deduplicated; it rejects with a 404 AppError for an unknown group id.
 */
export interface ClientGroups {
  membersOf(groupIds: readonly string[]): Promise<readonly string[]>;
}
