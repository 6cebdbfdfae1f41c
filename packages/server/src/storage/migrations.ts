import { Migrator, sql } from 'kysely';
import type { Kysely, Migration, MigrationProvider } from 'kysely';
import type { DbEngine } from './database.js';
import { withTableOptions } from './ddl.js';
import { describeDriverError } from './errors.js';

/** One step of svcd's own schema. `up` gets the engine for the few places where dialects differ. */
export interface SchemaMigration {
  name: string;
  up(db: Kysely<unknown>, engine: DbEngine): Promise<void>;
}

/**
 * The one ordered migration list for all three engines. Append new steps at the end with the next number;
 * never edit or reorder a step that has shipped. Times are BIGINT epoch milliseconds on every engine.
 */
const MIGRATIONS: readonly SchemaMigration[] = [
  {
    name: '001_api_sessions',
    async up(db, engine) {
      await withTableOptions(
        engine,
        db.schema
          .createTable('api_sessions')
          .addColumn('id', 'varchar(64)', (col) => col.primaryKey())
          .addColumn('username', 'varchar(150)', (col) => col.notNull())
          .addColumn('created_at', 'bigint', (col) => col.notNull())
          .addColumn('expires_at', 'bigint', (col) => col.notNull()),
      ).execute();
      await db.schema
        .createIndex('api_sessions_expires_at_idx')
        .on('api_sessions')
        .column('expires_at')
        .execute();
    },
  },
  {
    name: '002_clients',
    async up(db, engine) {
      await withTableOptions(
        engine,
        db.schema
          .createTable('clients')
          .addColumn('id', 'varchar(100)', (col) => col.primaryKey())
          .addColumn('client_auth_id', 'varchar(100)', (col) => col.notNull())
          .addColumn('connection_state', 'varchar(16)', (col) => col.notNull())
          .addColumn('disconnected_at', 'bigint')
          // MySQL's TEXT holds 64 KiB; a hello may carry up to 256 KiB.
          .addColumn('details', engine === 'mysql' ? sql`mediumtext` : 'text', (col) => col.notNull()),
      ).execute();
    },
  },
  {
    name: '003_tunnels',
    async up(db, engine) {
      await withTableOptions(
        engine,
        db.schema
          .createTable('tunnels')
          .addColumn('client_id', 'varchar(100)', (col) => col.notNull())
          .addColumn('id', 'integer', (col) => col.notNull())
          .addColumn('lhost', 'varchar(255)', (col) => col.notNull())
          .addColumn('lport', 'integer', (col) => col.notNull())
          .addColumn('lport_random', 'smallint', (col) => col.notNull())
          .addColumn('rhost', 'varchar(255)', (col) => col.notNull())
          .addColumn('rport', 'integer', (col) => col.notNull())
          .addColumn('acl', 'text')
          .addColumn('idle_timeout_minutes', 'integer', (col) => col.notNull())
          .addColumn('auto_close_ms', 'bigint')
          .addColumn('close_at', 'bigint')
          .addColumn('scheme', 'varchar(15)')
          .addColumn('owner', 'varchar(150)', (col) => col.notNull())
          .addColumn('api_host', 'varchar(255)', (col) => col.notNull())
          .addColumn('created_at', 'bigint', (col) => col.notNull())
          .addPrimaryKeyConstraint('tunnels_pkey', ['client_id', 'id']),
      ).execute();
    },
  },
  {
    name: '004_jobs',
    async up(db, engine) {
      // MySQL's TEXT holds 64 KiB and MEDIUMTEXT 16 MiB; output up to send_back_limit (4 MiB by default) may grow
      // when undecodable bytes become U+FFFD, so output columns are LONGTEXT there.
      const text = engine === 'mysql' ? sql`mediumtext` : 'text';
      const longText = engine === 'mysql' ? sql`longtext` : 'text';
      await withTableOptions(
        engine,
        db.schema
          .createTable('jobs')
          .addColumn('jid', 'varchar(36)', (col) => col.primaryKey())
          .addColumn('client_id', 'varchar(100)', (col) => col.notNull())
          .addColumn('client_name', 'varchar(200)', (col) => col.notNull())
          .addColumn('multi_job_id', 'varchar(36)')
          .addColumn('status', 'varchar(16)', (col) => col.notNull())
          .addColumn('created_at', 'bigint', (col) => col.notNull())
          .addColumn('started_at', 'bigint')
          .addColumn('finished_at', 'bigint')
          .addColumn('created_by', 'varchar(150)', (col) => col.notNull())
          .addColumn('command', text, (col) => col.notNull())
          .addColumn('interpreter', text, (col) => col.notNull())
          .addColumn('cwd', text, (col) => col.notNull())
          .addColumn('is_sudo', 'smallint', (col) => col.notNull())
          .addColumn('is_script', 'smallint', (col) => col.notNull())
          .addColumn('pid', 'integer')
          .addColumn('timeout_sec', 'integer', (col) => col.notNull())
          .addColumn('exit_code', 'integer')
          .addColumn('error', text, (col) => col.notNull())
          .addColumn('stdout', longText, (col) => col.notNull())
          .addColumn('stderr', longText, (col) => col.notNull())
          .addColumn('stdout_truncated', 'smallint', (col) => col.notNull())
          .addColumn('stderr_truncated', 'smallint', (col) => col.notNull()),
      ).execute();
      await db.schema
        .createIndex('jobs_client_created_idx')
        .on('jobs')
        .columns(['client_id', 'created_at'])
        .execute();
      await db.schema.createIndex('jobs_multi_job_idx').on('jobs').column('multi_job_id').execute();
    },
  },
  {
    name: '005_library_scripts',
    async up(db, engine) {
      // MySQL's TEXT holds 64 KiB; a script may have up to 160 KiB.
      const text = engine === 'mysql' ? sql`mediumtext` : 'text';
      await withTableOptions(
        engine,
        db.schema
          .createTable('library_scripts')
          .addColumn('id', 'varchar(36)', (col) => col.primaryKey())
          .addColumn('name', 'varchar(200)', (col) => col.notNull())
          .addColumn('interpreter', 'varchar(4096)', (col) => col.notNull())
          .addColumn('is_sudo', 'smallint', (col) => col.notNull())
          .addColumn('cwd', 'varchar(4096)', (col) => col.notNull())
          .addColumn('script', text, (col) => col.notNull())
          .addColumn('created_by', 'varchar(150)', (col) => col.notNull())
          .addColumn('created_at', 'bigint', (col) => col.notNull())
          .addUniqueConstraint('library_scripts_name_key', ['name']),
      ).execute();
      await db.schema
        .createIndex('library_scripts_created_at_idx')
        .on('library_scripts')
        .column('created_at')
        .execute();
    },
  },
  {
    name: '006_client_groups',
    async up(db, engine) {
      // params is JSON text; its size is bounded by [api] max_request_bytes, which may exceed TEXT's 64 KiB on MySQL.
      const text = engine === 'mysql' ? sql`mediumtext` : 'text';
      await withTableOptions(
        engine,
        db.schema
          .createTable('client_groups')
          .addColumn('id', 'varchar(100)', (col) => col.primaryKey())
          .addColumn('description', text, (col) => col.notNull())
          .addColumn('params', text, (col) => col.notNull()),
      ).execute();
    },
  },
  {
    name: '007_multi_jobs',
    async up(db, engine) {
      // client_ids of ten thousand clients is about 400 KiB of JSON: MEDIUMTEXT on MySQL (TEXT holds 64 KiB).
      const text = engine === 'mysql' ? sql`mediumtext` : 'text';
      await withTableOptions(
        engine,
        db.schema
          .createTable('multi_jobs')
          .addColumn('jid', 'varchar(36)', (col) => col.primaryKey())
          .addColumn('started_at', 'bigint', (col) => col.notNull())
          .addColumn('created_by', 'varchar(150)', (col) => col.notNull())
          .addColumn('client_ids', text)
          .addColumn('group_ids', text)
          .addColumn('tags', text)
          .addColumn('labels', text)
          .addColumn('command', text, (col) => col.notNull())
          .addColumn('cwd', text, (col) => col.notNull())
          .addColumn('interpreter', text, (col) => col.notNull())
          .addColumn('is_sudo', 'smallint', (col) => col.notNull())
          .addColumn('is_script', 'smallint', (col) => col.notNull())
          .addColumn('timeout_sec', 'integer', (col) => col.notNull())
          .addColumn('concurrent', 'smallint', (col) => col.notNull())
          .addColumn('abort_on_err', 'smallint', (col) => col.notNull()),
      ).execute();
      await db.schema.createIndex('multi_jobs_started_idx').on('multi_jobs').column('started_at').execute();
    },
  },
  {
    name: '008_two_factor',
    async up(db, engine) {
      // Logins waiting for their second factor, keyed by the login token's session (see api_sessions).
      await withTableOptions(
        engine,
        db.schema
          .createTable('two_fa_logins')
          .addColumn('session_id', 'varchar(64)', (col) => col.primaryKey())
          .addColumn('username', 'varchar(150)', (col) => col.notNull())
          .addColumn('code_hash', 'varchar(128)')
          .addColumn('code_expires_at', 'bigint')
          .addColumn('attempts', 'integer', (col) => col.notNull())
          .addColumn('token_lifetime_s', 'bigint')
          .addColumn('expires_at', 'bigint', (col) => col.notNull()),
      ).execute();
      await db.schema
        .createIndex('two_fa_logins_expires_at_idx')
        .on('two_fa_logins')
        .column('expires_at')
        .execute();
      // Authenticator-app secrets for every user store (file and static users too).
      await withTableOptions(
        engine,
        db.schema
          .createTable('user_totp')
          .addColumn('username', 'varchar(150)', (col) => col.primaryKey())
          .addColumn('secret', 'varchar(128)', (col) => col.notNull())
          .addColumn('last_used_step', 'bigint')
          .addColumn('created_at', 'bigint', (col) => col.notNull()),
      ).execute();
    },
  },
  {
    name: '009_api_tokens',
    async up(db, engine) {
      await withTableOptions(
        engine,
        db.schema
          .createTable('api_tokens')
          .addColumn('prefix', 'varchar(16)', (col) => col.primaryKey())
          .addColumn('username', 'varchar(150)', (col) => col.notNull())
          .addColumn('name', 'varchar(250)', (col) => col.notNull())
          .addColumn('scope', 'varchar(16)', (col) => col.notNull())
          .addColumn('secret_hash', 'varchar(64)', (col) => col.notNull())
          .addColumn('created_at', 'bigint', (col) => col.notNull())
          .addColumn('expires_at', 'bigint', (col) => col.notNull())
          .addUniqueConstraint('api_tokens_username_name_key', ['username', 'name']),
      ).execute();
    },
  },
  {
    name: '010_job_recovery',
    async up(db, engine) {
      // When svcd stops waiting for a running job's result (NULL once it ended), and whether its `unknown` was
      // presumed by svcd (a late result from the agent still replaces it).
      await db.schema.alterTable('jobs').addColumn('result_due_at', 'bigint').execute();
      await db.schema
        .alterTable('jobs')
        .addColumn('status_presumed', 'smallint', (col) => col.notNull().defaultTo(0))
        .execute();
      await db.schema.createIndex('jobs_result_due_idx').on('jobs').column('result_due_at').execute();
      // A reconnecting agent's jobs still waiting for a result, without reading the client's whole history.
      await db.schema
        .createIndex('jobs_client_status_idx')
        .on('jobs')
        .columns(['client_id', 'status'])
        .execute();
      // The clients a run resolved to (JSON ids, up to ~400 KiB), how many, and when every one had a child job;
      // a run without run_ended_at was interrupted by a crash and is completed at the next start.
      const text = engine === 'mysql' ? sql`mediumtext` : 'text';
      await db.schema.alterTable('multi_jobs').addColumn('target_ids', text).execute();
      await db.schema.alterTable('multi_jobs').addColumn('target_count', 'integer').execute();
      await db.schema.alterTable('multi_jobs').addColumn('run_ended_at', 'bigint').execute();
    },
  },
  {
    name: '012_library_script_openrport_fields',
    async up(db, engine) {
      // One column per statement: SQLite adds one at a time. Nullable, so no default is needed on any engine;
      // rows from before are filled below and svcd writes every column from now on.
      const table = () => db.schema.alterTable('library_scripts');
      await table()
        .addColumn('tags', engine === 'mysql' ? sql`mediumtext` : 'text')
        .execute();
      await table().addColumn('timeout_sec', 'integer').execute();
      await table().addColumn('updated_by', 'varchar(150)').execute();
      await table().addColumn('updated_at', 'bigint').execute();
      await sql`UPDATE library_scripts SET tags = '[]', timeout_sec = 60, updated_by = created_by, updated_at = created_at`.execute(
        db,
      );
    },
  },
  {
    name: '013_client_owner',
    async up(db) {
      // Which node holds a connected client and which connection of it (the client directory's owner); NULL while
      // the client is disconnected. One column per statement (SQLite).
      await db.schema.alterTable('clients').addColumn('owner_node', 'varchar(255)').execute();
      await db.schema.alterTable('clients').addColumn('connection_epoch', 'bigint').execute();
    },
  },
  {
    name: '014_saved_views',
    async up(db, engine) {
      await withTableOptions(
        engine,
        db.schema
          .createTable('saved_views')
          .addColumn('id', 'varchar(32)', (col) => col.primaryKey())
          .addColumn('username', 'varchar(150)', (col) => col.notNull())
          .addColumn('name', 'varchar(100)', (col) => col.notNull())
          .addColumn('page', 'varchar(32)', (col) => col.notNull())
          .addColumn('search', 'text', (col) => col.notNull())
          // JSON array of column ids.
          .addColumn('columns', 'text', (col) => col.notNull())
          .addColumn('sort', 'varchar(200)', (col) => col.notNull())
          .addColumn('created_at', 'bigint', (col) => col.notNull())
          .addColumn('updated_at', 'bigint', (col) => col.notNull())
          .addUniqueConstraint('saved_views_username_name_key', ['username', 'name']),
      ).execute();
    },
  },
  {
    name: '015_schedules',
    async up(db, engine) {
      const text = engine === 'mysql' ? sql`mediumtext` : 'text';
      await withTableOptions(
        engine,
        db.schema
          .createTable('schedules')
          .addColumn('id', 'varchar(64)', (col) => col.primaryKey())
          .addColumn('name', 'varchar(200)', (col) => col.notNull())
          .addColumn('definition', text, (col) => col.notNull())
          .addColumn('created_by', 'varchar(150)', (col) => col.notNull())
          .addColumn('created_at', 'bigint', (col) => col.notNull())
          .addColumn('updated_by', 'varchar(150)', (col) => col.notNull())
          .addColumn('updated_at', 'bigint', (col) => col.notNull())
          // Claimed by a conditional UPDATE (from the value read to the next one), so one node fires each minute.
          .addColumn('next_run_at', 'bigint'),
      ).execute();
      await db.schema
        .createIndex('schedules_next_run_at_idx')
        .on('schedules')
        .column('next_run_at')
        .execute();
      await withTableOptions(
        engine,
        db.schema
          .createTable('schedule_firings')
          .addColumn('schedule_id', 'varchar(64)', (col) => col.notNull())
          .addColumn('scheduled_at', 'bigint', (col) => col.notNull())
          .addColumn('fired_at', 'bigint', (col) => col.notNull())
          .addColumn('outcome', 'varchar(16)', (col) => col.notNull())
          .addColumn('reason', 'varchar(1000)', (col) => col.notNull())
          .addColumn('jid', 'varchar(64)')
          .addPrimaryKeyConstraint('schedule_firings_pkey', ['schedule_id', 'scheduled_at']),
      ).execute();
      await db.schema.alterTable('multi_jobs').addColumn('schedule_id', 'varchar(64)').execute();
      await db.schema
        .createIndex('multi_jobs_schedule_id_idx')
        .on('multi_jobs')
        .column('schedule_id')
        .execute();
    },
  },
  {
    name: '016_job_queue',
    async up(db, engine) {
      // Jobs queued for clients that are not connected (issue 27): until when each waits, the script it will
      // send (scripts only; cleared on delivery) and timeout_kill. One column per statement (SQLite).
      const text = engine === 'mysql' ? sql`mediumtext` : 'text';
      await db.schema.alterTable('jobs').addColumn('queue_expires_at', 'bigint').execute();
      await db.schema.alterTable('jobs').addColumn('timeout_kill', 'integer').execute();
      await db.schema.alterTable('jobs').addColumn('queued_script', text).execute();
      // The expiry sweep reads queued jobs by expiry; delivery uses jobs_client_status_idx.
      await db.schema
        .createIndex('jobs_status_queue_expires_idx')
        .on('jobs')
        .columns(['status', 'queue_expires_at'])
        .execute();
    },
  },
  {
    // Append-only: svcd inserts and purges by age, nothing updates a row.
    name: '019_audit_log',
    async up(db, engine) {
      const text = engine === 'mysql' ? sql`mediumtext` : 'text';
      await withTableOptions(
        engine,
        db.schema
          .createTable('audit_log')
          .addColumn(
            'id',
            engine === 'postgres' ? 'bigserial' : engine === 'mysql' ? 'bigint' : 'integer',
            (col) => (engine === 'postgres' ? col.primaryKey() : col.primaryKey().autoIncrement()),
          )
          .addColumn('timestamp', 'bigint', (col) => col.notNull())
          .addColumn('username', 'varchar(150)', (col) => col.notNull())
          .addColumn('remote_ip', 'varchar(64)', (col) => col.notNull())
          .addColumn('application', 'varchar(64)', (col) => col.notNull())
          .addColumn('action', 'varchar(32)', (col) => col.notNull())
          .addColumn('outcome', 'varchar(16)', (col) => col.notNull())
          .addColumn('affected_id', 'varchar(255)', (col) => col.notNull())
          .addColumn('client_id', 'varchar(100)', (col) => col.notNull())
          .addColumn('client_hostname', 'varchar(255)', (col) => col.notNull())
          .addColumn('request', text, (col) => col.notNull())
          .addColumn('response', text, (col) => col.notNull()),
      ).execute();
      // The list grammar compares text as lower(column): SQLite and PostgreSQL index that expression;
      // MariaDB has no expression indexes (its binary collation keeps the plain column index).
      for (const column of ['username', 'action', 'client_id'] as const) {
        const index = db.schema.createIndex(`audit_log_${column}_idx`).on('audit_log');
        await (
          engine === 'mysql'
            ? index.columns([column, 'timestamp'])
            : index.expression(sql`lower(${sql.ref(column)}), ${sql.ref('timestamp')}`)
        ).execute();
      }
      await db.schema.createIndex('audit_log_timestamp_idx').on('audit_log').column('timestamp').execute();
    },
  },
  {
    // When each API token was last used (written at most once a minute per token, by TokenUseStamps).
    name: '020_api_token_last_used',
    async up(db) {
      await db.schema.alterTable('api_tokens').addColumn('last_used_at', 'bigint').execute();
    },
  },
  {
    // The node coordinating a multi-client run (cluster): when it dies another node ends the run; NULL for a run
    // of a single svcd or one older than 021.
    name: '021_run_coordinator',
    async up(db) {
      await db.schema.alterTable('multi_jobs').addColumn('coordinator_node', 'varchar(255)').execute();
    },
  },
  {
    name: '022_login_throttle',
    async up(db, engine) {
      // Failed logins and bans in the shared database, so that a ban on one node of a cluster holds on all.
      await withTableOptions(
        engine,
        db.schema
          .createTable('login_throttle')
          .addColumn('kind', 'varchar(16)', (col) => col.notNull())
          // A user name (150) and an address (45) with a newline between them.
          .addColumn('key', 'varchar(200)', (col) => col.notNull())
          .addColumn('value', 'varchar(200)', (col) => col.notNull())
          .addColumn('expires_at', 'bigint', (col) => col.notNull())
          .addPrimaryKeyConstraint('login_throttle_pk', ['kind', 'key']),
      ).execute();
      await db.schema
        .createIndex('login_throttle_expires_at_idx')
        .on('login_throttle')
        .column('expires_at')
        .execute();
    },
  },
  {
    name: '024_staged_runs',
    async up(db) {
      // A run's delivery and staged-rollout options as JSON (queue_ttl, timeout_kill, batch_size, batch_delay,
      // max_failures; NULL: none), so a rerun repeats them; and a staged run's progress. One column per statement.
      await db.schema.alterTable('multi_jobs').addColumn('run_options', 'text').execute();
      await db.schema.alterTable('multi_jobs').addColumn('batches_done', 'integer').execute();
      await db.schema.alterTable('multi_jobs').addColumn('next_batch_at', 'bigint').execute();
      await db.schema.alterTable('multi_jobs').addColumn('stop_reason', 'text').execute();
    },
  },
  {
    // The alert delivery log, shared by the nodes of a cluster: inserted, listed, trimmed to the newest
    // [alerts] log_size rows by id; nothing updates a row.
    name: '025_alert_deliveries',
    async up(db, engine) {
      const text = engine === 'mysql' ? sql`mediumtext` : 'text';
      await withTableOptions(
        engine,
        db.schema
          .createTable('alert_deliveries')
          .addColumn(
            'id',
            engine === 'postgres' ? 'bigserial' : engine === 'mysql' ? 'bigint' : 'integer',
            (col) => (engine === 'postgres' ? col.primaryKey() : col.primaryKey().autoIncrement()),
          )
          .addColumn('alert_id', 'varchar(64)', (col) => col.notNull())
          .addColumn('rule', 'varchar(100)', (col) => col.notNull())
          .addColumn('event', 'varchar(32)', (col) => col.notNull())
          .addColumn('channel', 'varchar(16)', (col) => col.notNull())
          .addColumn('target', text, (col) => col.notNull())
          .addColumn('attempt', 'integer', (col) => col.notNull())
          .addColumn('at', 'bigint', (col) => col.notNull())
          .addColumn('outcome', 'varchar(16)', (col) => col.notNull())
          .addColumn('http_status', 'integer')
          .addColumn('error', text, (col) => col.notNull())
          .addColumn('node', 'varchar(255)', (col) => col.notNull()),
      ).execute();
      // The default order (newest first); the table is bounded, so the filters need no index of their own.
      await db.schema
        .createIndex('alert_deliveries_at_idx')
        .on('alert_deliveries')
        .columns(['at', 'id'])
        .execute();
    },
  },
  {
    // PostgreSQL answers a count over an expression index (lower(column), timestamp) from the index alone only when
    // the plain column is in the index too: without it, `/auditlog?filter[action]=…` counted 143,000 matches of
    // 1,000,000 records through the table (152 ms; 41 ms from the index, loaded machine, 2026-11-28).
    name: '028_audit_index_include',
    async up(db, engine) {
      if (engine !== 'postgres') return;
      for (const column of ['username', 'action', 'client_id'] as const) {
        await sql`drop index if exists ${sql.ref(`audit_log_${column}_idx`)}`.execute(db);
        await sql`create index ${sql.ref(`audit_log_${column}_idx`)} on audit_log (lower(${sql.ref(column)}), timestamp) include (${sql.ref(column)})`.execute(
          db,
        );
      }
    },
  },
  {
    // What each node of a cluster reads every heartbeat: the client rows written since its last reading
    // (clients.changed_at, set by every write of the repository, epoch ms of the writer) and the ids deleted
    // since then (client_removals, kept a day), rather than the whole table. Rows from before 029 count as
    // changed at 0 (read by the first full reading). One column per statement (SQLite).
    name: '029_client_changes',
    async up(db, engine) {
      await db.schema
        .alterTable('clients')
        .addColumn('changed_at', 'bigint', (col) => col.notNull().defaultTo(0))
        .execute();
      await db.schema.createIndex('clients_changed_at_idx').on('clients').column('changed_at').execute();
      await withTableOptions(
        engine,
        db.schema
          .createTable('client_removals')
          .addColumn('id', 'varchar(100)', (col) => col.primaryKey())
          .addColumn('removed_at', 'bigint', (col) => col.notNull()),
      ).execute();
      await db.schema
        .createIndex('client_removals_removed_at_idx')
        .on('client_removals')
        .column('removed_at')
        .execute();
    },
  },
  {
    // SQLite counts a filter by walking the index: `/auditlog?filter[action]=…` over 1,000,000 records walked
    // 143,000 entries (p99 43.6 and 60.0 ms in two runs, 2026-11-28), and username AND action read a table row per
    // record of the user. Counters per lower-cased value of each filterable column and of each pair of them (and
    // the total, field '*'), kept in the transactions that insert and purge records, answer one or two equality
    // filters without a time range in one lookup. SQLite only: one writer, so no hot rows shared by the nodes of a
    // cluster (PostgreSQL counts from the index alone, 028). Filled from the records already there.
    name: '030_audit_counts',
    async up(db, engine) {
      if (engine !== 'sqlite') return;
      await db.schema
        .createTable('audit_counts')
        .addColumn('field', 'varchar(64)', (col) => col.notNull())
        .addColumn('value', 'varchar(255)', (col) => col.notNull())
        .addColumn('value2', 'varchar(255)', (col) => col.notNull())
        .addColumn('n', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('audit_counts_pk', ['field', 'value', 'value2'])
        .modifyEnd(sql`without rowid`)
        .execute();
      const columns = ['username', 'action', 'client_id', 'outcome', 'application'];
      const keys: string[][] = [[], ...columns.map((c) => [c])];
      for (const [i, a] of columns.entries()) for (const b of columns.slice(i + 1)) keys.push([a, b]);
      const selects = keys.map((key) => {
        const lowered = key.map((c) => sql`lower(${sql.ref(c)})`);
        const [first = sql`''`, second = sql`''`] = lowered;
        const grouped = lowered.length > 0 ? sql` group by ${sql.join(lowered)}` : sql``;
        const field = key.length > 0 ? key.join(',') : '*';
        return sql`select ${field}, ${first}, ${second}, count(*) from audit_log${grouped}`;
      });
      await sql`insert into audit_counts (field, value, value2, n) ${sql.join(selects, sql` union all `)}`.execute(
        db,
      );
      await sql`delete from audit_counts where n = 0`.execute(db);
    },
  },
];

export const MIGRATION_TABLE = 'svcd_migrations';
export const MIGRATION_LOCK_TABLE = 'svcd_migrations_lock';

class InCodeMigrationProvider implements MigrationProvider {
  constructor(
    private readonly steps: readonly SchemaMigration[],
    private readonly engine: DbEngine,
  ) {}

  getMigrations(): Promise<Record<string, Migration>> {
    const migrations: Record<string, Migration> = {};
    for (const step of this.steps) migrations[step.name] = { up: (db) => step.up(db, this.engine) };
    return Promise.resolve(migrations);
  }
}

/** A migration list and the tables that record it. */
export interface MigrationSet {
  steps: readonly SchemaMigration[];
  table: string;
  lockTable: string;
}

const MAIN_SCHEMA: MigrationSet = {
  steps: MIGRATIONS,
  table: MIGRATION_TABLE,
  lockTable: MIGRATION_LOCK_TABLE,
};

/**
 * Brings the schema up to date. Safe to run on every start and from several nodes at once (Kysely takes a
 * lock: an advisory lock on PostgreSQL, GET_LOCK on MySQL). A database migrated by a newer svcd (with steps
 * this one does not know) is refused.
 */
export async function migrateToLatest<DB>(
  db: Kysely<DB>,
  engine: DbEngine,
  set: MigrationSet = MAIN_SCHEMA,
): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: new InCodeMigrationProvider(set.steps, engine),
    migrationTableName: set.table,
    migrationLockTableName: set.lockTable,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error !== undefined) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    const step = failed === undefined ? '' : ` ${failed}`;
    throw new Error(`database migration${step} failed: ${describeDriverError(error)}`, { cause: error });
  }
}
