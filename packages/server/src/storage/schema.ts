import type { ColumnType, Generated } from 'kysely';

/**
 * Epoch milliseconds in a BIGINT column. Integers avoid the engines' datetime differences; PostgreSQL's
 * driver returns BIGINT as a string, the others as a number, so read values go through `Number()`.
 */
export type EpochMillis = ColumnType<number | string, number, number>;

export interface ApiSessionsTable {
  id: string;
  username: string;
  created_at: EpochMillis;
  expires_at: EpochMillis;
}

/** The tables svcd owns, created by the migrations in migrations.ts. */
export interface StorageSchema {
  api_sessions: ApiSessionsTable;
}

/**
 * BOOLEAN as the engines return it: PostgreSQL a boolean, MySQL/MariaDB and SQLite 0/1. Never bound as a
 * parameter from JS (better-sqlite3 refuses booleans); the column default supplies it.
 */
export type StoredBoolean = ColumnType<boolean | number | string | null, never, never>;

export interface UsersTable {
  username: string;
  password: string;
  password_expired: StoredBoolean;
  two_fa_send_to: string | null;
  token: string | null;
  totp_secret: string | null;
}

export interface GroupsTable {
  username: string;
  group: string;
}

export interface GroupDetailsTable {
  name: string;
  permissions: string;
  tunnels_restricted: string;
  commands_restricted: string;
}

/**
 * The API user tables (spec 5.2 item 3) under fixed logical names. Their real names come from `[api]`
 * auth_user_table, auth_group_table and group_details_table; see table-names.ts for the renaming.
 * A type alias, not an interface: `Kysely.withTables` wants a type with an implicit index signature.
 */
export type UserTablesSchema = {
  user_table: UsersTable;
  group_table: GroupsTable;
  group_details_table: GroupDetailsTable;
};

/** Client records (migrations 002_clients, 013_client_owner); the record's remaining fields are JSON in `details`. */
export interface ClientsTable {
  id: string;
  client_auth_id: string;
  connection_state: string;
  disconnected_at: ColumnType<number | string | null, number | null, number | null>;
  details: string;
  /** The node holding the connected client; NULL while disconnected (and in rows from before 013). */
  owner_node: ColumnType<string | null, string | null | undefined, string | null>;
  connection_epoch: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** When the row was last written, epoch ms of the writing node (029); 0 for rows not written since. */
  changed_at: ColumnType<number | string, number | undefined, number>;
}

/** Client ids deleted, and when (migration 029): what other cluster nodes read to forget them. */
export interface ClientRemovalsTable {
  id: string;
  removed_at: ColumnType<number | string, number, number>;
}

// Declaration merging adds the table to the schema above.
export interface StorageSchema {
  clients: ClientsTable;
  client_removals: ClientRemovalsTable;
}

/** Command and script jobs (migration 004_jobs). Flags are 0/1 integers; times epoch milliseconds. */
export interface JobsTable {
  jid: string;
  client_id: string;
  client_name: string;
  multi_job_id: string | null;
  status: string;
  created_at: EpochMillis;
  started_at: ColumnType<number | string | null, number | null, number | null>;
  finished_at: ColumnType<number | string | null, number | null, number | null>;
  created_by: string;
  command: string;
  interpreter: string;
  cwd: string;
  is_sudo: ColumnType<number | string | boolean, number, number>;
  is_script: ColumnType<number | string | boolean, number, number>;
  pid: ColumnType<number | string | null, number | null, number | null>;
  timeout_sec: ColumnType<number | string, number, number>;
  exit_code: ColumnType<number | string | null, number | null, number | null>;
  error: string;
  stdout: string;
  stderr: string;
  stdout_truncated: ColumnType<number | string | boolean, number, number>;
  stderr_truncated: ColumnType<number | string | boolean, number, number>;
  /** Migration 010: when svcd stops waiting for the result of a running job; NULL once it ended. */
  result_due_at: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** Migration 010: 1 when svcd presumed the `unknown` status (no result came); an agent's result replaces it. */
  status_presumed: ColumnType<number | string | boolean, number | undefined, number>;
  /** Migration 016: a `queued` job waits for its client until then (run with queue_ttl); NULL otherwise. */
  queue_expires_at: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** Migration 016: 1 when the job kills its process group at timeout_sec (timeout_kill). */
  timeout_kill: ColumnType<number | string | boolean | null, number | null | undefined, number | null>;
  /** Migration 016: a queued script job's script (base64) until it is delivered; NULL otherwise. */
  queued_script: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface StorageSchema {
  jobs: JobsTable;
}

/** BIGINT that may be NULL (PostgreSQL returns BIGINT as a string). */
type NullableEpochMillis = ColumnType<number | string | null, number | null, number | null>;

/** Stored tunnel definitions (migration 003_tunnels), one row per tunnel, keyed by client and per-client id. */
export interface TunnelsTable {
  client_id: string;
  id: number;
  lhost: string;
  lport: number;
  /** 1: the port was picked from the pool; 0: the caller asked for it. */
  lport_random: number;
  rhost: string;
  rport: number;
  acl: string | null;
  idle_timeout_minutes: number;
  auto_close_ms: NullableEpochMillis;
  close_at: NullableEpochMillis;
  scheme: string | null;
  owner: string;
  api_host: string;
  created_at: EpochMillis;
}

export interface StorageSchema {
  tunnels: TunnelsTable;
}

/** The script library (migration 005_library_scripts); `created_at` in epoch milliseconds, `is_sudo` 0/1. */
export interface LibraryScriptsTable {
  id: string;
  name: string;
  interpreter: string;
  is_sudo: ColumnType<number | string | boolean, number, number>;
  cwd: string;
  script: string;
  created_by: string;
  created_at: EpochMillis;
  /** Migration 012: JSON array of strings; NULL on rows written before it (read as []). */
  tags: string | null;
  /** Migration 012; NULL on older rows (read as the job default). */
  timeout_sec: number | null;
  /** Migration 012; NULL on older rows (read as created_*). */
  updated_by: string | null;
  updated_at: EpochMillis | null;
}

export interface StorageSchema {
  library_scripts: LibraryScriptsTable;
}
/** The vault's key record (vault migration 001): one row, id 1, written by POST /vault-admin/init. */
export interface VaultKeyTable {
  id: number;
  /** JSON of the KDF parameters, e.g. {"algorithm":"scrypt","N":65536,"r":8,"p":1}. */
  kdf: string;
  salt: string;
  wrapped_key: string;
  created_at: EpochMillis;
  created_by: string;
}

/** Vault entries (vault migration 001); `value` holds the sealed value in base64, never plaintext. */
export interface VaultEntriesTable {
  id: Generated<number>;
  client_id: string;
  required_group: string;
  key: string;
  value: string;
  type: string;
  created_at: EpochMillis;
  updated_at: EpochMillis;
  created_by: string;
  updated_by: string;
}

/**
 * The vault's tables: in their own SQLite file, or next to svcd's tables on PostgreSQL/MySQL. A type alias, not
 * an interface: `Kysely.withTables` wants a type with an implicit index signature.
 */
export type VaultSchema = {
  vault_key: VaultKeyTable;
  vault_entries: VaultEntriesTable;
};

/** Client groups (migration 006_client_groups); `params` is the group's rules as JSON text. */
export interface ClientGroupsTable {
  id: string;
  description: string;
  params: string;
}

export interface StorageSchema {
  client_groups: ClientGroupsTable;
}

/** Multi-client jobs (migration 007_multi_jobs); targeting lists are JSON text, NULL when not given. */
export interface MultiJobsTable {
  jid: string;
  started_at: EpochMillis;
  created_by: string;
  client_ids: string | null;
  group_ids: string | null;
  tags: string | null;
  labels: string | null;
  command: string;
  cwd: string;
  interpreter: string;
  is_sudo: ColumnType<number | string | boolean, number, number>;
  is_script: ColumnType<number | string | boolean, number, number>;
  timeout_sec: number;
  concurrent: ColumnType<number | string | boolean, number, number>;
  abort_on_err: ColumnType<number | string | boolean, number, number>;
  /** Migration 010: the resolved targets (JSON array of client ids); NULL for runs older than 010. */
  target_ids: ColumnType<string | null, string | null | undefined, string | null>;
  target_count: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** Migration 010: when every target had a child job (the run's dispatching ended or was completed). */
  run_ended_at: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** Migration 015: the schedule that started the run; NULL for a run started by a request. */
  schedule_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** Migration 021: the cluster node coordinating the run; NULL on a single svcd. */
  coordinator_node: ColumnType<string | null, string | null | undefined, string | null>;
  /** Migration 024: delivery and staged-rollout options (JSON); a staged run's progress. */
  run_options: ColumnType<string | null, string | null | undefined, string | null>;
  batches_done: ColumnType<number | string | null, number | null | undefined, number | null>;
  next_batch_at: ColumnType<number | string | null, number | null | undefined, number | null>;
  stop_reason: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface StorageSchema {
  multi_jobs: MultiJobsTable;
}

/** Logins waiting for their second factor (migration 008_two_factor). */
export interface TwoFaLoginsTable {
  session_id: string;
  username: string;
  code_hash: string | null;
  code_expires_at: ColumnType<number | string | null, number | null, number | null>;
  attempts: ColumnType<number | string, number, number>;
  token_lifetime_s: ColumnType<number | string | null, number | null, number | null>;
  expires_at: EpochMillis;
}

/** Authenticator-app secrets of every user store (migration 008_two_factor). */
export interface UserTotpTable {
  username: string;
  secret: string;
  last_used_step: ColumnType<number | string | null, number | null, number | null>;
  created_at: EpochMillis;
}

export interface StorageSchema {
  two_fa_logins: TwoFaLoginsTable;
  user_totp: UserTotpTable;
}

/** Personal API tokens (migration 009_api_tokens); the secret only as its hex SHA-256. */
export interface ApiTokensTable {
  prefix: string;
  username: string;
  name: string;
  scope: string;
  secret_hash: string;
  created_at: EpochMillis;
  expires_at: EpochMillis;
  /** Migration 020; null until first used. */
  last_used_at: ColumnType<number | string | null, number | null | undefined, number | null>;
}

export interface StorageSchema {
  api_tokens: ApiTokensTable;
}

/** Saved views of console pages, per user (migration 014_saved_views); `columns` is a JSON array. */
export interface SavedViewsTable {
  id: string;
  username: string;
  name: string;
  page: string;
  search: string;
  columns: string;
  sort: string;
  created_at: EpochMillis;
  updated_at: EpochMillis;
}

/** Schedules (migration 015_schedules); what they run and on which clients is JSON in `definition`. */
export interface SchedulesTable {
  id: string;
  name: string;
  definition: string;
  created_by: string;
  created_at: EpochMillis;
  updated_by: string;
  updated_at: EpochMillis;
  /** The firing still to come (epoch ms); NULL when the expression never fires again. */
  next_run_at: ColumnType<number | string | null, number | null, number | null>;
}

/** One row per firing of a schedule (migration 015_schedules); the minute is unique per schedule. */
export interface ScheduleFiringsTable {
  schedule_id: string;
  scheduled_at: EpochMillis;
  fired_at: EpochMillis;
  outcome: string;
  reason: string;
  jid: string | null;
}

export interface StorageSchema {
  saved_views: SavedViewsTable;
  schedules: SchedulesTable;
  schedule_firings: ScheduleFiringsTable;
}

/** The audit log (migration 019_audit_log): append-only, purged by age. */
export interface AuditLogTable {
  id: Generated<number>;
  timestamp: EpochMillis;
  username: string;
  remote_ip: string;
  application: string;
  action: string;
  outcome: string;
  affected_id: string;
  client_id: string;
  client_hostname: string;
  request: string;
  response: string;
}

export interface StorageSchema {
  audit_log: AuditLogTable;
}

/**
 * How many audit records hold each lower-cased value of a counted column (`field` the column, `value2` ''), or
 * each pair of values of two columns (`field` 'username,action'); `field` '*' is the total (migration
 * 030_audit_counts, SQLite only). Kept in the transactions that insert and purge records.
 */
export interface AuditCountsTable {
  field: string;
  value: string;
  value2: string;
  n: number;
}

export interface StorageSchema {
  audit_counts: AuditCountsTable;
}

/** The login throttle's records (migration 022_login_throttle): shared by the nodes of a cluster. */
export interface LoginThrottleTable {
  /** Which of the throttle's record sets: `address`, `user_at_address` or `user`. */
  kind: string;
  key: string;
  /** The record as JSON. */
  value: string;
  expires_at: EpochMillis;
}

export interface StorageSchema {
  login_throttle: LoginThrottleTable;
}

/** The alert delivery log (migration 025_alert_deliveries): one row per attempt, the newest `log_size` kept. */
export interface AlertDeliveriesTable {
  id: Generated<number>;
  alert_id: string;
  rule: string;
  event: string;
  channel: string;
  target: string;
  attempt: ColumnType<number | string, number, number>;
  at: EpochMillis;
  outcome: string;
  http_status: ColumnType<number | string | null, number | null, number | null>;
  error: string;
  node: string;
}

export interface StorageSchema {
  alert_deliveries: AlertDeliveriesTable;
}
