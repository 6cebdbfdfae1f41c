import type { ListQuery, MultiJobSummary } from '@svc/protocol';

/** A multi-client job as stored, with how many clients it resolved to (null for a run stored before 010). */
export interface StoredMultiJob {
  summary: MultiJobSummary;
  targetCount: number | null;
  /** A staged run's progress as last saved; undefined for a run without batch_size. */
  rollout?: RolloutState;
}

/** Where a staged run is: batches started and finished, when the next starts, why it stopped. */
export interface RolloutState {
  batchesDone: number;
  nextBatchAt: Date | null;
  stopReason: string | null;
}

/** A run svcd stopped in the middle of (a crash): the clients it resolved to, in order. */
export interface InterruptedRun {
  summary: MultiJobSummary;
  targetIds: string[];
  /** The cluster node that coordinated it; null on a single svcd. */
  coordinator: string | null;
}

/** Persistence of multi-client jobs; their children live in the JobRepository. */
export interface MultiJobRepository {
  /** Stores the run with the clients it resolved to, in the order they are run. */
  insert(job: MultiJobSummary, targetIds: readonly string[]): Promise<void>;
  /**
   * Without `withTargets` the targeting (client_ids, group_ids, tags, labels) is not read and comes back null:
   * for a run on many clients it is the bulk of the record.
   */
  get(jid: string, withTargets?: boolean): Promise<StoredMultiJob | undefined>;
  list(query: ListQuery): Promise<{ data: MultiJobSummary[]; count: number }>;
  /**
   * As `list`, counting and paging only the runs whose every recorded target satisfies `keep` (a run stored
   * before 010, without recorded targets, is left out). Reads the runs the filters match a slice at a time.
   */
  listWhere(
    query: ListQuery,
    keep: (clientId: string) => boolean,
  ): Promise<{ data: MultiJobSummary[]; count: number }>;
  /** The clients the run resolved to; null for a run stored before 010, undefined for an unknown run. */
  targetIds(jid: string): Promise<string[] | null | undefined>;
  /** Every target of the run has a child job now (dispatched, failed, or recorded as not started). */
  markRunEnded(jid: string, at: Date): Promise<void>;
  /** Saves a staged run's progress. */
  saveRollout(jid: string, state: RolloutState): Promise<void>;
  /** Runs whose dispatching never ended: svcd died while they ran (or, in a cluster, runs still going). */
  interrupted(): Promise<InterruptedRun[]>;
  /**
   * Makes `to` the coordinator of a run still coordinated by `from` (null: none recorded); false when another
   * node took it first, so only one node ends a run whose coordinator died.
   */
  takeOverRun(jid: string, from: string | null, to: string): Promise<boolean>;
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
