import { AppError, ERROR_CODES } from '@svc/protocol';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_ENGINES, createTestDatabase } from '../../../../test-support/databases.js';
import type { TestDatabase } from '../../../../test-support/databases.js';
import { openDatabase } from '../../src/storage/database.js';
import type { Database } from '../../src/storage/database.js';
import { REMOVALS_KEPT_MS, SqlClientRepository } from '../../src/storage/client-repository.js';
import { DatabaseUserStore } from '../../src/storage/database-user-store.js';
import { SqlSessionStore } from '../../src/storage/session-store.js';
import { SqlJobRepository } from '../../src/storage/job-repository.js';
import { clientGroupParamsSchema, parseListQuery, type Job } from '@svc/protocol';
import { JOB_LIST } from '../../src/core/jobs/job-list.js';
import { RESULT_GRACE_MS } from '../../src/core/jobs/ports.js';
import { MULTI_JOB_CHILDREN } from '../../src/core/jobs/multi-job-list.js';
import { SqlTunnelRepository } from '../../src/storage/tunnel-repository.js';
import { SqlLibraryScriptRepository } from '../../src/storage/library-script-repository.js';
import { LIBRARY_SCRIPT_LIST } from '../../src/core/library/library-list.js';
import { MAX_SCRIPT_BYTES, type LibraryScript } from '@svc/protocol';
import { SqlClientGroupRepository } from '../../src/storage/client-group-repository.js';
import { CLIENT_GROUP_LIST } from '../../src/core/client-groups/client-group-list.js';
import { SqlMultiJobRepository } from '../../src/storage/multi-job-repository.js';
import { MULTI_JOB_LIST } from '../../src/core/jobs/multi-job-list.js';
import type { MultiJobSummary } from '@svc/protocol';
import type { StoredTunnel } from '../../src/core/tunnels/ports.js';
import { ensureUserTables } from '../../src/storage/user-tables.js';
import { openVaultStorage, vaultFile, type VaultStorage } from '../../src/storage/open-vault-storage.js';
import { sqliteFile } from '../../src/storage/dialects.js';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { NewVaultEntry } from '../../src/core/vault/ports.js';
import { VAULT_LIST } from '../../src/core/vault/vault-list.js';
import type { UserTableNames } from '../../src/storage/user-tables.js';
import { SqlPendingLoginStore, SqlTotpSecretStore } from '../../src/storage/two-factor-repository.js';
import { SqlApiTokenRepository } from '../../src/storage/api-token-repository.js';
import { deleteUserLeftovers } from '../../src/storage/user-leftovers.js';
import type { ApiTokenRecord } from '../../src/core/api-tokens/ports.js';
import { SqlSavedViewRepository } from '../../src/storage/saved-view-repository.js';
import type { SavedViewRecord } from '../../src/core/saved-views/ports.js';

/** Each test gets its own user tables inside the engine's fresh database. */
let tableCounter = 0;
const freshNames = (details = false): UserTableNames => {
  tableCounter += 1;
  return {
    userTable: `users_${tableCounter}`,
    groupTable: `groups_${tableCounter}`,
    ...(details ? { groupDetailsTable: `group_details_${tableCounter}` } : {}),
  };
};

const HASH = '$2b$10$abcdefghijklmnopqrstuuN6VJ4wqMRg5ihGBv0XqLwZ7nS4lJrS.';

describe.each(ALL_ENGINES)('storage contract on %s', (engine) => {
  let testDb: TestDatabase;
  let database: Database;

  beforeAll(async () => {
    testDb = await createTestDatabase(engine);
    database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
  });

  afterAll(async () => {
    await database?.close();
    await testDb?.drop();
  });

  const openStore = async (names = freshNames()): Promise<DatabaseUserStore> =>
    DatabaseUserStore.open(database, names);

  const rejection = async (promise: Promise<unknown>): Promise<AppError> => {
    const err = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  };

  describe('migrations', () => {
    it('are idempotent: opening the database again finds the schema up to date', async () => {
      const again = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
      try {
        const rows = await again.db
          .withTables<{ svcd_migrations: { name: string } }>()
          .selectFrom('svcd_migrations')
          .select('name')
          .execute();
        expect(rows.map((r) => r.name)).toEqual([
          '001_api_sessions',
          '002_clients',
          '003_tunnels',
          '004_jobs',
          '005_library_scripts',
          '006_client_groups',
          '007_multi_jobs',
          '008_two_factor',
          '009_api_tokens',
          '010_job_recovery',
          '012_library_script_openrport_fields',
          '013_client_owner',
          '014_saved_views',
          '015_schedules',
          '016_job_queue',
          '019_audit_log',
          '020_api_token_last_used',
          '021_run_coordinator',
          '022_login_throttle',
          '024_staged_runs',
          '025_alert_deliveries',
          '028_audit_index_include',
          '029_client_changes',
          '030_audit_counts',
        ]);
        expect(await again.db.selectFrom('api_sessions').selectAll().execute()).toEqual([]);
      } finally {
        await again.close();
      }
    });
  });

  describe('sessions', () => {
    const created = new Date('2030-01-01T00:00:00Z');
    // Beyond 2^32 ms and 2038: the columns must be BIGINT on every engine.
    const expires = new Date('2100-01-01T00:00:00.123Z');

    it('creates, checks, expires and revokes a session', async () => {
      const store = new SqlSessionStore(database);
      await store.create({ id: 's-active', username: 'alice', createdAt: created, expiresAt: expires });

      expect(await store.isActive('s-active', created)).toBe(true);
      expect(await store.isActive('s-active', new Date(expires.getTime() - 1))).toBe(true);
      expect(await store.isActive('s-active', expires)).toBe(false);
      expect(await store.isActive('s-unknown', created)).toBe(false);

      expect(await store.revoke('s-active')).toBe(true);
      expect(await store.isActive('s-active', created)).toBe(false);
      expect(await store.revoke('s-active')).toBe(false);
    });

    it('purges only expired sessions', async () => {
      const store = new SqlSessionStore(database);
      const now = new Date('2040-06-01T12:00:00Z');
      const at = (offsetMs: number) => new Date(now.getTime() + offsetMs);
      await store.create({
        id: 'p-old',
        username: 'bob',
        createdAt: at(-7200_000),
        expiresAt: at(-3600_000),
      });
      await store.create({ id: 'p-edge', username: 'bob', createdAt: at(-600_000), expiresAt: now });
      await store.create({ id: 'p-live', username: 'bob', createdAt: at(-600_000), expiresAt: at(1) });

      expect(await store.purgeExpired(now)).toBe(2);
      expect(await store.isActive('p-live', now)).toBe(true);
      expect(await store.revoke('p-old')).toBe(false);
      expect(await store.purgeExpired(now)).toBe(0);
      expect(await store.revoke('p-live')).toBe(true);
    });

    it('keeps unicode usernames', async () => {
      const store = new SqlSessionStore(database);
      await store.create({
        id: 's-unicode',
        username: 'Zoë 用户 😀',
        createdAt: created,
        expiresAt: expires,
      });
      const row = await database.db
        .selectFrom('api_sessions')
        .selectAll()
        .where('id', '=', 's-unicode')
        .executeTakeFirstOrThrow();
      expect(row.username).toBe('Zoë 用户 😀');
      expect(Number(row.expires_at)).toBe(expires.getTime());
      expect(Number(row.created_at)).toBe(created.getTime());
      await store.revoke('s-unicode');
    });
  });

  describe('user tables', () => {
    it('are created when missing, with the spec columns and defaults', async () => {
      const names = freshNames(true);
      await ensureUserTables(database, names);
      await ensureUserTables(database, names); // second run: nothing to do

      const db = database.db.withTables<{
        [k: string]: Record<string, unknown>;
      }>();
      await db.insertInto(names.userTable).values({ username: 'u1', password: 'p' }).execute();
      await db.insertInto(names.groupTable).values({ username: 'u1', group: 'g1' }).execute();
      await db
        .insertInto(names.groupDetailsTable ?? '')
        .values({ name: 'g1' })
        .execute();

      const user = await db.selectFrom(names.userTable).selectAll().executeTakeFirstOrThrow();
      expect(user).toMatchObject({ username: 'u1', two_fa_send_to: null, token: null, totp_secret: null });
      expect([false, 0]).toContain(user.password_expired);
      const details = await db
        .selectFrom(names.groupDetailsTable ?? '')
        .selectAll()
        .executeTakeFirstOrThrow();
      expect(details).toEqual({
        name: 'g1',
        permissions: '{}',
        tunnels_restricted: '{}',
        commands_restricted: '{}',
      });

      // username is unique; (username, group) is unique
      await expect(
        db.insertInto(names.userTable).values({ username: 'u1', password: 'p' }).execute(),
      ).rejects.toThrow();
      await expect(
        db.insertInto(names.groupTable).values({ username: 'u1', group: 'g1' }).execute(),
      ).rejects.toThrow();
    });

    it('are left alone when present', async () => {
      const names = freshNames();
      const db = database.db.withTables<{
        [k: string]: Record<string, unknown>;
      }>();
      await db.schema
        .createTable(names.userTable)
        .addColumn('username', 'varchar(150)', (c) => c.notNull().unique())
        .addColumn('password', 'varchar(255)', (c) => c.notNull())
        .addColumn('password_expired', 'boolean', (c) => c.notNull().defaultTo(false))
        .addColumn('two_fa_send_to', 'varchar(150)')
        .addColumn('token', 'varchar(36)')
        .addColumn('totp_secret', 'text')
        .addColumn('email', 'varchar(100)')
        .execute();
      await db
        .insertInto(names.userTable)
        .values({
          username: 'legacy',
          password: HASH,
          password_expired: sql`true`,
          two_fa_send_to: 'legacy@example.com',
          totp_secret: 'otpauth://totp/x',
          email: 'kept@example.com',
        })
        .execute();

      const store = await openStore(names);

      const row = await db.selectFrom(names.userTable).selectAll().executeTakeFirstOrThrow();
      expect(row.email).toBe('kept@example.com');
      expect(await store.find('legacy')).toEqual({
        username: 'legacy',
        passwordHash: HASH,
        groups: [],
        twoFaSendTo: 'legacy@example.com',
        totpSecret: 'otpauth://totp/x',
        passwordExpired: true,
      });
      // the group table was missing and has been created
      await store.update('legacy', { groups: ['Administrators'] });
      expect((await store.find('legacy'))?.groups).toEqual(['Administrators']);
    });

    it('refuses an existing table that lacks a column the store reads', async () => {
      const names = freshNames();
      await database.db.schema
        .createTable(names.userTable)
        .addColumn('username', 'varchar(150)')
        .addColumn('password', 'varchar(255)')
        .execute();
      await expect(ensureUserTables(database, names)).rejects.toThrow(/\[api\] auth_user_table/);
    });

    it('refuses table names that are not plain identifiers, naming the config keys', async () => {
      await expect(ensureUserTables(database, { userTable: 'users; drop', groupTable: 'g' })).rejects.toThrow(
        /\[api\] auth_user_table "users; drop"/,
      );
      await expect(
        ensureUserTables(database, { userTable: 'u', groupTable: '1groups', groupDetailsTable: 'a-b' }),
      ).rejects.toThrow(/\[api\] auth_group_table.*\[api\] group_details_table/);
      await expect(ensureUserTables(database, { userTable: 'same', groupTable: 'SAME' })).rejects.toThrow(
        /same table/,
      );
      expect(() => new DatabaseUserStore(database, { userTable: 'x'.repeat(65), groupTable: 'g' })).toThrow(
        /auth_user_table/,
      );
    });
  });

  describe('DatabaseUserStore', () => {
    it('describes itself as the database store', async () => {
      const store = await openStore();
      expect(store.kind).toBe('database');
      expect(store.writesVisibleAtOnce).toBe(true);
      await store.reload();
    });

    it('creates and finds users with sorted, de-duplicated groups', async () => {
      const store = await openStore();
      await store.create({
        username: 'alice',
        passwordHash: HASH,
        groups: ['Users', 'Administrators', 'Users'],
      });
      expect(await store.find('alice')).toEqual({
        username: 'alice',
        passwordHash: HASH,
        groups: ['Administrators', 'Users'],
        twoFaSendTo: null,
        totpSecret: null,
        passwordExpired: false,
      });
      expect(await store.find('nobody')).toBeUndefined();
    });

    it('lists users sorted by username with their groups', async () => {
      const store = await openStore();
      await store.create({ username: 'carol', passwordHash: 'h-carol', groups: ['b', 'a'] });
      await store.create({ username: 'Bob', passwordHash: 'h-bob', groups: [] });
      await store.create({ username: 'alice', passwordHash: 'h-alice', groups: ['x'] });

      const users = await store.list();
      expect(users.map((u) => [u.username, u.groups])).toEqual([
        ['Bob', []],
        ['alice', ['x']],
        ['carol', ['a', 'b']],
      ]);
      expect(users.every((u) => u.passwordExpired === false)).toBe(true);
      expect(await store.listForWrite()).toEqual(users);
    });

    it('keeps unicode names of 150 characters and finds names exactly, also look-alikes stored by hand', async () => {
      const names = freshNames();
      const store = await openStore(names);
      const long = 'ü'.repeat(75) + '用'.repeat(74) + '😀';
      expect([...long]).toHaveLength(150);
      await store.create({ username: long, passwordHash: HASH, groups: ['Grüppe 😀'] });
      expect(await store.find(long)).toMatchObject({ username: long, groups: ['Grüppe 😀'] });

      // Rows written before look-alikes were refused keep working, each under its exact name.
      await database.db
        .withTables<{ [k: string]: { username: string; password: string } }>()
        .insertInto(names.userTable)
        .values([
          { username: 'Alice', password: 'upper' },
          { username: 'alice', password: 'lower' },
        ])
        .execute();
      expect((await store.find('Alice'))?.passwordHash).toBe('upper');
      expect((await store.find('alice'))?.passwordHash).toBe('lower');
      expect(await store.find('ALICE')).toBeUndefined();
      expect((await store.list()).map((u) => u.username)).toEqual(['Alice', 'alice', long]);
    });

    it('refuses a name that differs from an existing one only by case or compatibility form', async () => {
      const store = await openStore();
      await store.create({ username: 'admin', passwordHash: 'first', groups: ['Administrators'] });
      for (const lookAlike of ['ADMIN', 'Admin', 'ａｄｍｉｎ', 'admin\u200b', 'admın']) {
        const err = await rejection(store.create({ username: lookAlike, passwordHash: 'x', groups: [] }));
        expect(err, lookAlike).toMatchObject({ kind: 'conflict', code: ERROR_CODES.userExists });
        expect(err.message, lookAlike).toBe(
          `User '${lookAlike}' is too similar to the existing user 'admin'`,
        );
      }
      const exact = await rejection(store.create({ username: 'admin', passwordHash: 'x', groups: [] }));
      expect(exact.message).toBe(`User 'admin' already exists`);
      await store.create({ username: 'straße', passwordHash: 'p', groups: [] });
      const folded = await rejection(store.create({ username: 'STRASSE', passwordHash: 'x', groups: [] }));
      expect(folded.message).toMatch(/too similar to the existing user 'straße'/);
      expect((await store.list()).map((u) => [u.username, u.passwordHash])).toEqual([
        ['admin', 'first'],
        ['straße', 'p'],
      ]);
    });

    it('of look-alikes created at the same time on two connections, exactly one is stored', async () => {
      const names = freshNames();
      await ensureUserTables(database, names);
      // better-sqlite3 is synchronous: a second connection in this process would wait for the write lock while
      // blocking the event loop the first one needs to commit. SQLite runs one writer at a time anyway.
      const other =
        engine === 'sqlite' ? database : await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
      try {
        const first = new DatabaseUserStore(database, names);
        const second = new DatabaseUserStore(other, names);
        await first.create({ username: 'seed', passwordHash: 'p', groups: [] });
        for (let round = 0; round < 8; round++) {
          const results = await Promise.allSettled([
            first.create({ username: `racer-${round}`, passwordHash: 'a', groups: ['g'] }),
            second.create({ username: `RACER-${round}`, passwordHash: 'b', groups: ['g'] }),
          ]);
          const refused = results.filter((r) => r.status === 'rejected');
          expect(refused, `round ${round}`).toHaveLength(1);
          expect((refused[0] as PromiseRejectedResult).reason).toMatchObject({
            code: ERROR_CODES.userExists,
          });
        }
        expect(await first.list()).toHaveLength(9);
      } finally {
        if (other !== database) await other.close();
      }
    });

    it('rejects a duplicate username with a conflict and leaves the user as it was', async () => {
      const store = await openStore();
      await store.create({ username: 'dave', passwordHash: 'first', groups: ['g1'] });
      const err = await rejection(store.create({ username: 'dave', passwordHash: 'second', groups: ['g2'] }));
      expect(err).toMatchObject({ kind: 'conflict', code: ERROR_CODES.userExists });
      expect(await store.find('dave')).toMatchObject({ passwordHash: 'first', groups: ['g1'] });
    });

    it('updates groups (replacing the set), the password alone, or both', async () => {
      const store = await openStore();
      await store.create({ username: 'erin', passwordHash: 'p1', groups: ['a', 'b'] });

      await store.update('erin', { groups: ['c', 'b'] });
      expect(await store.find('erin')).toMatchObject({ passwordHash: 'p1', groups: ['b', 'c'] });

      await store.update('erin', { passwordHash: 'p2' });
      expect(await store.find('erin')).toMatchObject({ passwordHash: 'p2', groups: ['b', 'c'] });

      await store.update('erin', { passwordHash: 'p3', groups: [] });
      expect(await store.find('erin')).toMatchObject({ passwordHash: 'p3', groups: [] });

      await store.update('erin', {});
      expect(await store.find('erin')).toMatchObject({ passwordHash: 'p3', groups: [] });
    });

    it('answers not_found for updating an unknown user and writes nothing', async () => {
      const names = freshNames();
      const store = await openStore(names);
      const err = await rejection(store.update('ghost', { passwordHash: 'x', groups: ['Administrators'] }));
      expect(err).toMatchObject({ kind: 'not_found', code: ERROR_CODES.userNotFound });
      const orphans = await database.db
        .withTables<{ [k: string]: { username: string } }>()
        .selectFrom(names.groupTable)
        .select('username')
        .execute();
      expect(orphans).toEqual([]);
    });

    it('deletes a user with its groups; unknown users are not_found', async () => {
      const names = freshNames();
      const store = await openStore(names);
      await store.create({ username: 'frank', passwordHash: 'p', groups: ['a', 'b'] });
      await store.create({ username: 'grace', passwordHash: 'p', groups: ['a'] });

      await store.delete('frank');
      expect(await store.find('frank')).toBeUndefined();
      expect((await store.list()).map((u) => u.username)).toEqual(['grace']);
      const memberships = await database.db
        .withTables<{ [k: string]: { username: string } }>()
        .selectFrom(names.groupTable)
        .select('username')
        .execute();
      expect(memberships).toEqual([{ username: 'grace' }]);

      const err = await rejection(store.delete('frank'));
      expect(err).toMatchObject({ kind: 'not_found', code: ERROR_CODES.userNotFound });

      // a new user of the same name starts without the old memberships
      await store.create({ username: 'frank', passwordHash: 'p', groups: [] });
      expect((await store.find('frank'))?.groups).toEqual([]);
    });

    it('reads password_expired as a boolean', async () => {
      const names = freshNames();
      const store = await openStore(names);
      await store.create({ username: 'henry', passwordHash: 'p', groups: [] });
      await store.create({ username: 'iris', passwordHash: 'p', groups: [] });
      await database.db
        .withTables<{ [k: string]: { username: string; password_expired: unknown } }>()
        .updateTable(names.userTable)
        .set({ password_expired: sql`true` })
        .where('username', '=', 'henry')
        .execute();

      expect((await store.find('henry'))?.passwordExpired).toBe(true);
      expect((await store.find('iris'))?.passwordExpired).toBe(false);
      expect((await store.list()).map((u) => u.passwordExpired)).toEqual([true, false]);
    });
  });
  describe('client records', () => {
    it('markDisconnected marks exactly the given rows, in batches past 500 ids', async () => {
      const clients = new SqlClientRepository(database);
      const ids = Array.from({ length: 501 }, (_, n) => `batch-${String(n).padStart(3, '0')}`);
      for (const id of [...ids, 'batch-other'])
        await clients.save({
          id,
          clientAuthId: 'auth',
          connectionState: 'connected',
          disconnectedAt: null,
          owner: { nodeId: 'node-a', epoch: 1 },
          details: { name: id },
        });
      await clients.markDisconnected(ids, 1_700_000_000_000);
      const rows = (await clients.loadAll()).filter((row) => row.id.startsWith('batch-'));
      const disconnected = rows.filter((row) => row.connectionState === 'disconnected');
      expect(disconnected.map((row) => row.id).sort()).toEqual(ids);
      expect(new Set(disconnected.map((row) => row.disconnectedAt))).toEqual(new Set([1_700_000_000_000]));
      expect(new Set(disconnected.map((row) => row.owner))).toEqual(new Set([null]));
      expect(rows.find((row) => row.id === 'batch-other')).toMatchObject({
        connectionState: 'connected',
        disconnectedAt: null,
        owner: { nodeId: 'node-a', epoch: 1 },
        details: { name: 'batch-other' },
      });
      await clients.markDisconnected([], 1);
    });

    it('stores the owner node and connection epoch of a connected client; marking it disconnected clears them', async () => {
      const clients = new SqlClientRepository(database);
      // An epoch beyond 2^32 (milliseconds since 1970 seed it): BIGINT on every engine.
      const owner = { nodeId: 'svcd-node-with-a-long-host-name.example.org', epoch: 1_900_000_000_123 };
      const row = (id: string, connected: boolean) => ({
        id,
        clientAuthId: 'auth',
        connectionState: connected ? ('connected' as const) : ('disconnected' as const),
        disconnectedAt: connected ? null : 1_700_000_000_000,
        owner: connected ? owner : null,
        details: { name: id },
      });
      await clients.save(row('owned-1', true));
      await clients.save(row('owned-2', true));
      await clients.save(row('owned-3', false));
      const read = async (id: string) => (await clients.loadAll()).find((r) => r.id === id);
      expect(await read('owned-1')).toEqual(row('owned-1', true));
      expect(await read('owned-3')).toEqual(row('owned-3', false));
      // A newer connection on another node replaces the owner.
      const moved = { ...row('owned-1', true), owner: { nodeId: 'node-b', epoch: owner.epoch + 1 } };
      await clients.save(moved);
      expect(await read('owned-1')).toEqual(moved);
      await clients.markDisconnected(['owned-1'], 1_700_000_000_500);
      expect(await read('owned-1')).toMatchObject({ connectionState: 'disconnected', owner: null });
      await clients.markAllDisconnected(1_700_000_000_600);
      expect(await read('owned-2')).toMatchObject({
        connectionState: 'disconnected',
        disconnectedAt: 1_700_000_000_600,
        owner: null,
      });
    });

    it('a conditional disconnect changes only the row still held by that node and epoch', async () => {
      const clients = new SqlClientRepository(database);
      const held = (id: string, nodeId: string, epoch: number) => ({
        id,
        clientAuthId: 'auth',
        connectionState: 'connected' as const,
        disconnectedAt: null,
        owner: { nodeId, epoch },
        details: { name: id },
      });
      const gone = (id: string) => ({
        ...held(id, 'x', 0),
        connectionState: 'disconnected' as const,
        disconnectedAt: 1_700_000_000_000,
        owner: null,
      });
      const read = async (id: string) => (await clients.loadAll()).find((r) => r.id === id);
      await clients.save(held('taken-1', 'node-b', 20));
      // node-a's late close of its older connection: the row names node-b now.
      await clients.save(gone('taken-1'), { nodeId: 'node-a', epoch: 10 });
      expect(await read('taken-1')).toEqual(held('taken-1', 'node-b', 20));
      await clients.save(gone('taken-1'), { nodeId: 'node-b', epoch: 19 });
      expect(await read('taken-1')).toEqual(held('taken-1', 'node-b', 20));
      await clients.save(gone('taken-1'), { nodeId: 'node-b', epoch: 20 });
      expect(await read('taken-1')).toEqual(gone('taken-1'));
      // No row: nothing is inserted.
      await clients.save(gone('taken-none'), { nodeId: 'node-a', epoch: 1 });
      expect(await read('taken-none')).toBeUndefined();

      await clients.save(held('taken-2', 'node-a', 1));
      await clients.save(held('taken-3', 'node-b', 2));
      await clients.markDisconnected(['taken-2', 'taken-3'], 1_700_000_000_900, 'node-a');
      expect(await read('taken-2')).toMatchObject({ connectionState: 'disconnected', owner: null });
      expect(await read('taken-3')).toEqual(held('taken-3', 'node-b', 2));
    });

    it('changedSince gives the rows written and the ids deleted from a time on, by every kind of write', async () => {
      // Times of writing far past every other test's rows (written at Date.now()).
      let now = 5_000_000_000_000;
      const clients = new SqlClientRepository(database, () => now);
      const held = (id: string, epoch = 1) => ({
        id,
        clientAuthId: 'auth',
        connectionState: 'connected' as const,
        disconnectedAt: null,
        owner: { nodeId: 'node-a', epoch },
        details: { name: id },
      });
      const since = async (at: number) => {
        const { rows, removed } = await clients.changedSince(at);
        return {
          rows: rows
            .filter((row) => row.id.startsWith('chg-'))
            .map((row) => row.id)
            .sort(),
          removed: removed.filter((id) => id.startsWith('chg-')).sort(),
        };
      };
      await clients.save(held('chg-a'));
      await clients.save(held('chg-b'));
      now += 1_000;
      const t1 = now;
      await clients.save(held('chg-c'));
      expect(await since(t1 - 1_000)).toEqual({ rows: ['chg-a', 'chg-b', 'chg-c'], removed: [] });
      expect(await since(t1)).toEqual({ rows: ['chg-c'], removed: [] });
      expect((await clients.changedSince(t1)).rows.find((row) => row.id === 'chg-c')).toEqual(held('chg-c'));

      // A conditional write that does not apply changes nothing; one that applies, and markDisconnected, do.
      now += 1_000;
      const t2 = now;
      await clients.save(
        { ...held('chg-a'), connectionState: 'disconnected', owner: null },
        { nodeId: 'x', epoch: 9 },
      );
      expect(await since(t2)).toEqual({ rows: [], removed: [] });
      await clients.markDisconnected(['chg-a'], 1_500_000_000_000, 'node-a');
      expect(await since(t2)).toEqual({ rows: ['chg-a'], removed: [] });
      now += 1_000;
      const t3 = now;
      await clients.markAllDisconnected(1_600_000_000_000);
      expect((await since(t3)).rows).toEqual(['chg-b', 'chg-c']);

      // Deletions: one client, and the disconnected ones past a cutoff; an id written again is among the rows.
      now += 1_000;
      const t4 = now;
      expect(await clients.delete('chg-c')).toBe(true);
      expect(await clients.delete('chg-c')).toBe(false);
      expect(await since(t4)).toEqual({ rows: [], removed: ['chg-c'] });
      now += 1_000;
      const t5 = now;
      expect(await clients.deleteDisconnectedBefore(1_500_000_000_001)).toBe(1);
      expect(await since(t5)).toEqual({ rows: [], removed: ['chg-a'] });
      await clients.save(held('chg-c', 2));
      expect(await since(t4)).toEqual({ rows: ['chg-c'], removed: ['chg-a', 'chg-c'] });

      // Removals are kept a day: the next cleanup after that drops them.
      now += REMOVALS_KEPT_MS + 1_000;
      await clients.deleteDisconnectedBefore(1);
      expect((await since(0)).removed).toEqual([]);
      expect(await clients.delete('chg-b')).toBe(true);
      expect(await clients.delete('chg-c')).toBe(true);
    });

    it('heldBy gives the connected rows the given nodes hold, and nothing for no node', async () => {
      const clients = new SqlClientRepository(database);
      const held = (id: string, nodeId: string) => ({
        id,
        clientAuthId: 'auth',
        connectionState: 'connected' as const,
        disconnectedAt: null,
        owner: { nodeId, epoch: 7 },
        details: { name: id, tags: ['a'] },
      });
      const ids = async (nodes: string[]) =>
        (await clients.heldBy(nodes))
          .map((row) => row.id)
          .filter((id) => id.startsWith('held-'))
          .sort();
      await clients.save(held('held-1', 'gone-a'));
      await clients.save(held('held-2', 'gone-a'));
      await clients.save(held('held-3', 'gone-b'));
      await clients.save(held('held-4', 'staying'));
      await clients.save(held('held-5', 'gone-a'));
      await clients.markDisconnected(['held-5'], 1_700_000_000_000);
      expect(await ids(['gone-a'])).toEqual(['held-1', 'held-2']);
      expect(await ids(['gone-a', 'gone-b'])).toEqual(['held-1', 'held-2', 'held-3']);
      expect(await ids([])).toEqual([]);
      expect((await clients.heldBy(['gone-b'])).find((row) => row.id === 'held-3')).toEqual(
        held('held-3', 'gone-b'),
      );
      for (const id of ['held-1', 'held-2', 'held-3', 'held-4', 'held-5']) await clients.delete(id);
    });
  });

  describe('jobs', () => {
    let jobCounter = 0;
    const newJob = (clientId: string, overrides: Partial<Job> = {}): Job => {
      jobCounter += 1;
      return {
        jid: `00000000-0000-4000-8000-${String(jobCounter).padStart(12, '0')}`,
        status: 'running',
        started_at: null,
        finished_at: null,
        client_id: clientId,
        client_name: 'Web One',
        command: '/usr/bin/echo hi',
        cwd: '',
        is_sudo: false,
        is_script: false,
        interpreter: '',
        pid: null,
        created_by: 'alice',
        created_at: new Date(Date.UTC(2030, 0, 1, 0, 0, jobCounter, 123)).toISOString(),
        timeout_sec: 60,
        exit_code: null,
        error: '',
        result: { stdout: '', stderr: '', stdout_truncated: false, stderr_truncated: false },
        ...overrides,
      };
    };
    const outcome = {
      status: 'failed' as const,
      exit_code: 3,
      finished_at: '2030-01-01T00:01:00.456Z',
      error: 'exit status 3',
      stdout: 'out ✓ \u0000 end',
      stderr: 'x'.repeat(4 * 1024 * 1024),
      stdout_truncated: false,
      stderr_truncated: true,
    };

    it('stores a job, its start and its result once, with millisecond times and 4 MiB of output', async () => {
      const jobs = new SqlJobRepository(database);
      const job = newJob('web-1', { is_sudo: true, cwd: '/tmp', interpreter: 'bash' });
      await jobs.insert(job);
      expect(await jobs.get('web-1', job.jid)).toEqual(job);
      expect(await jobs.get('web-2', job.jid)).toBeUndefined();

      await jobs.markStarted(job.jid, { pid: 4242, started_at: '2030-01-01T00:00:30.789+00:00' });
      expect(await jobs.finish('web-2', job.jid, outcome)).toBe(false);
      expect(await jobs.finish('web-1', job.jid, outcome)).toBe(true);
      expect(await jobs.finish('web-1', job.jid, { ...outcome, status: 'successful' })).toBe(false);
      const stored = await jobs.get('web-1', job.jid);
      expect(stored).toMatchObject({
        status: 'failed',
        pid: 4242,
        started_at: '2030-01-01T00:00:30.789Z',
        finished_at: '2030-01-01T00:01:00.456Z',
        exit_code: 3,
        error: 'exit status 3',
        is_sudo: true,
        result: { stdout: 'out ✓ \uFFFD end', stdout_truncated: false, stderr_truncated: true },
      });
      expect(stored?.result.stderr).toHaveLength(4 * 1024 * 1024);
    });

    it('stores starts and results of several jobs in one transaction, each result once', async () => {
      const jobs = new SqlJobRepository(database);
      const [a, b, c] = [newJob('batch-1'), newJob('batch-2'), newJob('batch-3')] as [Job, Job, Job];
      await jobs.insertMany([a, b, c]);
      await jobs.markStartedMany([
        { jid: a.jid, started: { pid: 1, started_at: '2030-01-01T00:00:01.000Z' } },
        { jid: b.jid, started: { pid: 2, started_at: '2030-01-01T00:00:02.000Z' } },
      ]);
      const stored = await jobs.finishMany([
        { clientId: 'batch-1', jid: a.jid, outcome },
        { clientId: 'batch-9', jid: b.jid, outcome },
        { clientId: 'batch-3', jid: c.jid, outcome: { ...outcome, status: 'successful', exit_code: 0 } },
        { clientId: 'batch-1', jid: a.jid, outcome: { ...outcome, status: 'unknown' } },
      ]);
      expect(stored).toEqual([true, false, true, false]);
      expect(await jobs.get('batch-1', a.jid)).toMatchObject({ status: 'failed', pid: 1 });
      expect(await jobs.get('batch-2', b.jid)).toMatchObject({ status: 'running', pid: 2 });
      expect(await jobs.get('batch-3', c.jid)).toMatchObject({ status: 'successful', pid: null });
    });

    it('records a start together with its result; a result not stored still leaves the start recorded', async () => {
      const jobs = new SqlJobRepository(database);
      const [a, b, c] = [newJob('both-1'), newJob('both-2'), newJob('both-3')] as [Job, Job, Job];
      await jobs.insertMany([a, b, c]);
      const started = (pid: number) => ({ pid, started_at: `2030-01-01T00:00:0${pid}.000Z` });
      const stored = await jobs.recordMany(
        [{ jid: c.jid, started: started(3) }],
        [
          { clientId: 'both-1', jid: a.jid, outcome, started: started(1) },
          { clientId: 'forged', jid: b.jid, outcome, started: started(2) },
          { clientId: 'both-2', jid: b.jid, outcome: { ...outcome, status: 'successful', exit_code: 0 } },
        ],
      );
      expect(stored).toEqual([true, false, true]);
      expect(await jobs.get('both-1', a.jid)).toMatchObject({
        status: 'failed',
        exit_code: 3,
        pid: 1,
        started_at: '2030-01-01T00:00:01.000Z',
        finished_at: outcome.finished_at,
      });
      expect(await jobs.get('both-2', b.jid)).toMatchObject({
        status: 'successful',
        pid: 2,
        started_at: '2030-01-01T00:00:02.000Z',
      });
      expect(await jobs.get('both-3', c.jid)).toMatchObject({ status: 'running', pid: 3 });
    });

    it('records a fan-out sized batch of starts and results, each job by its own values', async () => {
      const jobs = new SqlJobRepository(database);
      const batch = Array.from({ length: 300 }, (_, i) => newJob(`wide-${i}`));
      await jobs.insertMany(batch);
      const startedAt = (i: number) => new Date(Date.UTC(2030, 0, 2, 0, 0, 0, i)).toISOString();
      await jobs.markStartedMany(
        batch
          .slice(0, 150)
          .map((job, i) => ({ jid: job.jid, started: { pid: 1000 + i, started_at: startedAt(i) } })),
      );
      const finishes = batch.slice(100).map((job, k) => {
        const i = k + 100;
        return {
          // Every tenth names another client: not stored, but the start it carries is.
          clientId: i % 10 === 0 ? 'someone-else' : job.client_id,
          jid: job.jid,
          outcome: { ...outcome, exit_code: i, stdout: `out ${i}\u0000`, stderr: '' },
          ...(i >= 150 ? { started: { pid: 1000 + i, started_at: startedAt(i) } } : {}),
        };
      });
      const stored = await jobs.recordMany([], finishes);
      expect(stored).toEqual(finishes.map((f) => f.clientId !== 'someone-else'));
      for (const i of [0, 99, 100, 101, 149, 150, 151, 160, 299]) {
        const job = await jobs.get(`wide-${i}`, batch[i]!.jid);
        const finished = i >= 100 && i % 10 !== 0;
        expect(job, `job ${i}`).toMatchObject({
          status: finished ? 'failed' : 'running',
          pid: 1000 + i,
          started_at: startedAt(i),
          exit_code: finished ? i : null,
          result: { stdout: finished ? `out ${i}\uFFFD` : '' },
        });
      }
    });

    it('finds running jobs whose result is overdue; a presumed unknown is replaced by a late result once', async () => {
      const jobs = new SqlJobRepository(database);
      const created = new Date(Date.UTC(2031, 0, 1));
      const at = (ms: number) => new Date(created.getTime() + ms).toISOString();
      const due = newJob('due-1', { created_at: at(0), timeout_sec: 5 });
      const later = newJob('due-1', { created_at: at(0), timeout_sec: 3600 });
      const done = newJob('due-2', { created_at: at(0), timeout_sec: 5 });
      await jobs.insertMany([due, later, done]);
      await jobs.finish('due-2', done.jid, { ...outcome, status: 'successful', exit_code: 0 });
      const dueAt = created.getTime() + 5000 + RESULT_GRACE_MS;
      const overdue = async (ms: number) =>
        (await jobs.overdue(new Date(ms), 1000)).filter((j) => j.clientId.startsWith('due-'));
      expect(await overdue(dueAt - 1)).toEqual([]);
      expect(await overdue(dueAt)).toEqual([{ jid: due.jid, clientId: 'due-1' }]);

      const presumed = { ...outcome, status: 'unknown' as const, error: 'no result', presumed: true };
      expect(await jobs.finish('due-1', due.jid, presumed)).toBe(true);
      expect(await overdue(dueAt + 3600_000)).toEqual([{ jid: later.jid, clientId: 'due-1' }]);
      expect(await jobs.get('due-1', due.jid)).toMatchObject({ status: 'unknown', error: 'no result' });
      const late = { ...outcome, status: 'successful' as const, exit_code: 0, error: '' };
      expect(await jobs.finish('due-1', due.jid, late)).toBe(true);
      expect(await jobs.finish('due-1', due.jid, presumed)).toBe(false);
      expect(await jobs.get('due-1', due.jid)).toMatchObject({ status: 'successful', exit_code: 0 });
    });

    it("lists a client's started jobs still awaiting a result from its agent, created before a moment", async () => {
      const jobs = new SqlJobRepository(database);
      const t0 = Date.UTC(2032, 0, 1);
      const at = (ms: number) => new Date(t0 + ms).toISOString();
      const running = newJob('held-1', { created_at: at(0) });
      const presumedJob = newJob('held-1', { created_at: at(1) });
      const reported = newJob('held-1', { created_at: at(2) });
      const newer = newJob('held-1', { created_at: at(5000) });
      const otherClient = newJob('held-2', { created_at: at(0) });
      const unconfirmed = newJob('held-1', { created_at: at(3) });
      await jobs.insertMany([running, presumedJob, reported, newer, otherClient, unconfirmed]);
      await jobs.markStartedMany(
        [running, presumedJob, reported, newer, otherClient].map((job) => ({
          jid: job.jid,
          started: { pid: 7, started_at: at(10) },
        })),
      );
      const unknown = { ...outcome, status: 'unknown' as const };
      await jobs.finish('held-1', presumedJob.jid, { ...unknown, presumed: true });
      await jobs.finish('held-1', reported.jid, unknown);
      const jidsOf = (rows: { jid: string }[]) => rows.map(({ jid }) => jid).sort();
      expect(jidsOf(await jobs.awaitingResult(['held-1'], new Date(t0 + 5000)))).toEqual(
        [running.jid, presumedJob.jid].sort(),
      );
      // A lost cluster node's jobs include those whose start was never recorded; several clients in one query.
      expect(
        (await jobs.awaitingResult(['held-1', 'held-2', 'held-3'], new Date(t0 + 5000), true)).sort((a, b) =>
          a.jid.localeCompare(b.jid),
        ),
      ).toEqual(
        [
          { clientId: 'held-1', jid: running.jid },
          { clientId: 'held-1', jid: presumedJob.jid },
          { clientId: 'held-1', jid: unconfirmed.jid },
          { clientId: 'held-2', jid: otherClient.jid },
        ].sort((a, b) => a.jid.localeCompare(b.jid)),
      );
      expect(await jobs.awaitingResult([], new Date(t0 + 5000))).toEqual([]);
      // A final unknown (not presumed) ends the wait for good.
      await jobs.finish('held-1', presumedJob.jid, unknown);
      expect(jidsOf(await jobs.awaitingResult(['held-1'], new Date(t0 + 5000)))).toEqual([running.jid]);
    });

    it("lists one client's jobs with the list grammar, newest first by default", async () => {
      const jobs = new SqlJobRepository(database);
      const a = newJob('list-1', { created_by: 'bob' });
      const b = newJob('list-1');
      const c = newJob('list-1', { is_script: true });
      for (const job of [a, b, c, newJob('list-2')]) await jobs.insert(job);
      await jobs.finish('list-1', b.jid, { ...outcome, status: 'successful', exit_code: 0, error: '' });
      const list = async (query: Record<string, string>) =>
        (await jobs.list('list-1', parseListQuery(query, JOB_LIST))).data.map((j) => j.jid);

      expect(await list({})).toEqual([c.jid, b.jid, a.jid]);
      expect(await list({ sort: 'created_at' })).toEqual([a.jid, b.jid, c.jid]);
      expect(await list({ 'filter[status]': 'successful' })).toEqual([b.jid]);
      expect(await list({ 'filter[created_by]': 'BOB' })).toEqual([a.jid]);
      expect(await list({ 'filter[is_script]': '1' })).toEqual([c.jid]);
      const page = await jobs.list('list-1', parseListQuery({ 'page[limit]': '2' }, JOB_LIST));
      expect(page).toMatchObject({ count: 3 });
      expect(page.data.map((j) => j.jid)).toEqual([c.jid, b.jid]);
    });
  });

  describe('multi-client jobs', () => {
    const multiJob = (n: number, overrides: Partial<MultiJobSummary> = {}): MultiJobSummary => ({
      jid: `10000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
      started_at: new Date(Date.UTC(2030, 0, 2, 0, 0, n, 5)).toISOString(),
      created_by: 'alice',
      client_ids: ['web-1', 'web-2'],
      group_ids: null,
      tags: null,
      labels: null,
      command: '/usr/bin/uptime',
      cwd: '/tmp',
      interpreter: '',
      is_sudo: false,
      is_script: false,
      timeout_sec: 30,
      concurrent: false,
      abort_on_err: true,
      ...overrides,
    });
    const child = (n: number, multiJobId: string, clientId: string): Job => ({
      jid: `20000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
      status: 'failed',
      started_at: null,
      finished_at: '2030-01-02T00:00:09.000Z',
      client_id: clientId,
      client_name: clientId.toUpperCase(),
      command: '/usr/bin/uptime',
      cwd: '/tmp',
      is_sudo: false,
      is_script: false,
      interpreter: '',
      pid: null,
      created_by: 'alice',
      created_at: new Date(Date.UTC(2030, 0, 2, 0, 0, 0, n)).toISOString(),
      timeout_sec: 30,
      multi_job_id: multiJobId,
      exit_code: null,
      error: 'client is not connected',
      result: { stdout: '', stderr: '', stdout_truncated: false, stderr_truncated: false },
    });

    it('stores a multi-client job with its targeting, and reads its children inserted in one batch', async () => {
      const repo = new SqlMultiJobRepository(database);
      const jobs = new SqlJobRepository(database);
      const byIds = multiJob(1, { client_ids: Array.from({ length: 10_000 }, (_, i) => `client-${i}`) });
      const byLabels = multiJob(2, {
        client_ids: null,
        labels: { operator: 'AND', labels: ['city:Berlin', 'os : linux'] },
        is_script: true,
        command: '#!/bin/sh\necho ✓\n',
        concurrent: true,
        abort_on_err: false,
        is_sudo: true,
      });
      await repo.insert(byIds, byIds.client_ids ?? []);
      await repo.insert(byLabels, ['web-1']);
      expect(await repo.get(byIds.jid)).toEqual({ summary: byIds, targetCount: 10_000 });
      expect(await repo.get(byLabels.jid)).toEqual({ summary: byLabels, targetCount: 1 });
      expect(await repo.get(byIds.jid, false)).toEqual({
        summary: { ...byIds, client_ids: null },
        targetCount: 10_000,
      });
      expect(await repo.get(byLabels.jid, false)).toEqual({
        summary: { ...byLabels, labels: null },
        targetCount: 1,
      });
      expect(await repo.get('10000000-0000-4000-8000-999999999999')).toBeUndefined();

      const children = Array.from({ length: 256 }, (_, i) => child(i + 1, byIds.jid, `client-${i}`));
      await jobs.insertMany(children);
      const read = await jobs.listByMultiJob(byIds.jid);
      expect(read).toEqual(children);
      expect(await jobs.listByMultiJob(byLabels.jid)).toEqual([]);
      expect(await jobs.getById(children[3]!.jid)).toEqual(children[3]);
      const page = (query: Record<string, string>) =>
        jobs.listChildren(byIds.jid, parseListQuery(query, MULTI_JOB_CHILDREN));
      expect(await page({ 'page[limit]': '100', 'page[offset]': '200' })).toEqual({
        data: children.slice(200),
        count: 256,
      });
      const picked = await page({ 'filter[client_id]': 'client-7', sort: '-created_at' });
      expect(picked).toEqual({ data: [children[7]], count: 1 });
      expect(await jobs.listChildren(byLabels.jid, parseListQuery({}, MULTI_JOB_CHILDREN))).toEqual({
        data: [],
        count: 0,
      });
    });

    it('counts the children of a multi-client job by status', async () => {
      const repo = new SqlMultiJobRepository(database);
      const jobs = new SqlJobRepository(database);
      const counted = multiJob(3);
      const other = multiJob(4);
      await repo.insert(counted, ['client-0']);
      await repo.insert(other, ['client-0']);
      expect(await jobs.countByMultiJob(counted.jid)).toEqual({
        running: 0,
        successful: 0,
        failed: 0,
        unknown: 0,
        queued: 0,
        expired: 0,
        cancelled: 0,
        skipped: 0,
      });
      const statuses = [
        'running',
        'running',
        'running',
        'successful',
        'successful',
        'failed',
        'unknown',
      ] as const;
      await jobs.insertMany(
        statuses.map((status, i) => ({ ...child(300 + i, counted.jid, `client-${i}`), status })),
      );
      await jobs.insertMany([child(400, other.jid, 'client-0')]);
      expect(await jobs.countByMultiJob(counted.jid)).toEqual({
        running: 3,
        successful: 2,
        failed: 1,
        unknown: 1,
        queued: 0,
        expired: 0,
        cancelled: 0,
        skipped: 0,
      });
      expect(await jobs.countByMultiJob(other.jid)).toEqual({
        running: 0,
        successful: 0,
        failed: 1,
        unknown: 0,
        queued: 0,
        expired: 0,
        cancelled: 0,
        skipped: 0,
      });
    });

    it("keeps the targets of a run until its end is recorded; lists its children's clients and last end", async () => {
      const repo = new SqlMultiJobRepository(database);
      const jobs = new SqlJobRepository(database);
      const cut = multiJob(21, { client_ids: null, group_ids: ['fleet'] });
      const ended = multiJob(22);
      await repo.insert(cut, ['fleet-1', 'fleet-2', 'fleet-3']);
      await repo.insert(ended, ['web-1', 'web-2']);
      await repo.markRunEnded(ended.jid, new Date('2030-01-02T00:10:00Z'));
      const interrupted = (await repo.interrupted()).filter((run) =>
        [cut.jid, ended.jid].includes(run.summary.jid),
      );
      expect(interrupted).toEqual([
        {
          summary: { ...cut, group_ids: null },
          targetIds: ['fleet-1', 'fleet-2', 'fleet-3'],
          coordinator: null,
        },
      ]);
      expect(await jobs.lastFinishedAt(cut.jid)).toBeUndefined();
      await jobs.insertMany([
        { ...child(501, cut.jid, 'fleet-1'), finished_at: '2030-01-02T00:00:09.250Z' },
        { ...child(502, cut.jid, 'fleet-2'), finished_at: '2030-01-02T00:00:11.500Z' },
        { ...child(503, cut.jid, 'fleet-3'), status: 'running', finished_at: null },
      ]);
      expect((await jobs.childClientIds(cut.jid)).sort()).toEqual(['fleet-1', 'fleet-2', 'fleet-3']);
      expect(await jobs.lastFinishedAt(cut.jid)).toBe('2030-01-02T00:00:11.500Z');
      await repo.markRunEnded(cut.jid, new Date('2030-01-02T00:10:00Z'));
      expect((await repo.interrupted()).map((run) => run.summary.jid)).not.toContain(cut.jid);
    });

    it('records the node coordinating a run; one node at a time takes over a run whose coordinator died', async () => {
      const onA = new SqlMultiJobRepository(database, 'node-a');
      const run = multiJob(23);
      await onA.insert(run, ['web-1']);
      const coordinatorOf = async () =>
        (await onA.interrupted()).find((r) => r.summary.jid === run.jid)?.coordinator;
      expect(await coordinatorOf()).toBe('node-a');
      expect(await onA.takeOverRun(run.jid, 'node-a', 'node-b')).toBe(true);
      expect(await onA.takeOverRun(run.jid, 'node-a', 'node-c')).toBe(false);
      expect(await coordinatorOf()).toBe('node-b');
      await onA.markRunEnded(run.jid, new Date('2030-01-02T00:10:00Z'));
      expect(await onA.takeOverRun(run.jid, 'node-b', 'node-c')).toBe(false);
      const single = multiJob(24);
      await new SqlMultiJobRepository(database).insert(single, ['web-1']);
      expect(await onA.takeOverRun(single.jid, null, 'node-a')).toBe(true);
    });

    it("keeps a run's delivery and staged-rollout options and a staged run's progress", async () => {
      const repo = new SqlMultiJobRepository(database);
      const staged = multiJob(31, {
        queue_ttl: 900,
        timeout_kill: true,
        batch_size: '10%',
        batch_delay: 30,
        max_failures: 2,
      });
      const plain = multiJob(32);
      await repo.insert(staged, ['web-1', 'web-2']);
      await repo.insert(plain, ['web-1']);
      expect(await repo.get(staged.jid)).toEqual({
        summary: staged,
        targetCount: 2,
        rollout: { batchesDone: 0, nextBatchAt: null, stopReason: null },
      });
      expect(await repo.get(plain.jid)).toEqual({ summary: plain, targetCount: 1 });
      const next = new Date('2030-01-02T00:20:00.000Z');
      await repo.saveRollout(staged.jid, { batchesDone: 1, nextBatchAt: next, stopReason: null });
      expect((await repo.get(staged.jid, false))?.rollout).toEqual({
        batchesDone: 1,
        nextBatchAt: next,
        stopReason: null,
      });
      await repo.saveRollout(staged.jid, { batchesDone: 2, nextBatchAt: null, stopReason: 'max_failures' });
      expect((await repo.get(staged.jid))?.rollout).toEqual({
        batchesDone: 2,
        nextBatchAt: null,
        stopReason: 'max_failures',
      });
      const interrupted = (await repo.interrupted()).find((run) => run.summary.jid === staged.jid);
      expect(interrupted?.summary).toMatchObject({ batch_size: '10%', max_failures: 2, queue_ttl: 900 });
    });

    it('lists multi-client jobs with the list grammar, newest first by default', async () => {
      const repo = new SqlMultiJobRepository(database);
      const a = multiJob(11, { created_by: 'bob' });
      const b = multiJob(12, { is_script: true });
      const c = multiJob(13);
      for (const job of [a, b, c]) await repo.insert(job, ['web-1']);
      const list = async (query: Record<string, string>) =>
        (
          await repo.list(
            parseListQuery(
              { 'filter[jid]': '10000000-0000-4000-8000-00000000001*', ...query },
              MULTI_JOB_LIST,
            ),
          )
        ).data.map((j) => j.jid);
      expect(await list({})).toEqual([c.jid, b.jid, a.jid]);
      expect(await list({ sort: 'started_at' })).toEqual([a.jid, b.jid, c.jid]);
      expect(await list({ 'filter[created_by]': 'BOB' })).toEqual([a.jid]);
      expect(await list({ 'filter[is_script]': '1' })).toEqual([b.jid]);
      const page = await repo.list(
        parseListQuery(
          { 'page[limit]': '1', 'filter[jid]': '10000000-0000-4000-8000-00000000001*' },
          MULTI_JOB_LIST,
        ),
      );
      expect(page.count).toBe(3);
      expect(page.data.map((j) => j.jid)).toEqual([c.jid]);
    });

    it('lists and pages only the runs whose every target is kept; reads the targets of one run', async () => {
      const repo = new SqlMultiJobRepository(database);
      // More runs than one slice of listWhere's scan (200).
      const runs = Array.from({ length: 205 }, (_, i) => multiJob(2_100_000 + i));
      for (const [i, job] of runs.entries())
        await repo.insert(job, i % 3 === 0 ? ['web-1', 'db-1'] : i === 1 ? [] : ['web-2', 'web-1']);
      const legacy = runs[2]!.jid;
      await database.db
        .updateTable('multi_jobs')
        .set({ target_ids: null })
        .where('jid', '=', legacy)
        .execute();
      const kept = runs
        .filter((_, i) => i % 3 !== 0 && i !== 1 && i !== 2)
        .map((j) => j.jid)
        .reverse();
      const keep = (id: string) => id.startsWith('web-');
      const query = (extra: Record<string, string>) =>
        parseListQuery({ 'filter[jid]': '10000000-0000-4000-8000-0000021*', ...extra }, MULTI_JOB_LIST);
      const all = await repo.listWhere(query({ 'page[limit]': '1000' }), keep);
      expect(all.count).toBe(kept.length);
      expect(all.data.map((j) => j.jid)).toEqual(kept);
      expect(all.data[0]).toEqual(runs[203]);
      const page = await repo.listWhere(query({ 'page[limit]': '50', 'page[offset]': '100' }), keep);
      expect(page).toEqual({ data: all.data.slice(100, 150), count: kept.length });
      const oldest = await repo.listWhere(query({ sort: 'started_at', 'page[limit]': '2' }), keep);
      expect(oldest.data.map((j) => j.jid)).toEqual([runs[4]!.jid, runs[5]!.jid]);
      expect(await repo.listWhere(query({}), () => false)).toEqual({ data: [], count: 0 });

      expect(await repo.targetIds(runs[3]!.jid)).toEqual(['web-1', 'db-1']);
      expect(await repo.targetIds(runs[1]!.jid)).toEqual([]);
      expect(await repo.targetIds(legacy)).toBeNull();
      expect(await repo.targetIds('10000000-0000-4000-8000-999999999998')).toBeUndefined();
    });
  });

  describe('tunnel definitions', () => {
    const tunnel = (clientId: string, id: number, overrides: Partial<StoredTunnel> = {}): StoredTunnel => ({
      clientId,
      id,
      lhost: '0.0.0.0',
      lport: 20_000 + id,
      lportRandom: true,
      rhost: '127.0.0.1',
      rport: 22,
      acl: null,
      idleTimeoutMinutes: 5,
      autoCloseMs: null,
      closeAt: null,
      scheme: null,
      owner: 'admin',
      apiHost: 'svc.example.org',
      createdAt: 1_700_000_000_123,
      ...overrides,
    });
    const saveClient = (clients: SqlClientRepository, id: string, disconnectedAt: number | null) =>
      clients.save({
        id,
        clientAuthId: 'auth',
        connectionState: disconnectedAt === null ? 'connected' : 'disconnected',
        disconnectedAt,
        owner: null,
        details: {},
      });

    it("stores every field, lists a client's tunnels by id, updates the port, deletes one", async () => {
      const tunnels = new SqlTunnelRepository(database);
      // Beyond 2^32 ms and 2038 and 31 days of milliseconds: BIGINT on every engine.
      const full = tunnel('t-full', 2, {
        lhost: '2001:db8::1',
        lport: 65535,
        lportRandom: false,
        rhost: 'db.internal.example.org',
        rport: 5432,
        acl: '10.0.0.0/8,2001:db8::/32',
        idleTimeoutMinutes: 10_080,
        autoCloseMs: 31 * 86_400_000,
        closeAt: 4_102_444_800_123,
        scheme: 'fifteen-chars-x',
        owner: 'Zoë 用户 😀',
      });
      await tunnels.insert(full);
      await tunnels.insert(tunnel('t-full', 1));
      await tunnels.insert(tunnel('t-other', 1, { lport: 30_000 }));
      expect(await tunnels.listByClient('t-full')).toEqual([tunnel('t-full', 1), full]);
      expect(await tunnels.listByClient('t-none')).toEqual([]);
      expect(await tunnels.clientsWithTunnels(['t-none', 't-full', 't-other', 'Zoë 用户 😀'])).toEqual(
        new Set(['t-full', 't-other']),
      );
      expect(await tunnels.clientsWithTunnels([])).toEqual(new Set());

      await tunnels.updatePort('t-full', 1, 20_500);
      expect((await tunnels.listByClient('t-full'))[0]?.lport).toBe(20_500);
      expect((await tunnels.listByClient('t-other'))[0]?.lport).toBe(30_000);
      const ports = (await tunnels.listPorts()).filter((p) => p.clientId.startsWith('t-'));
      expect(ports.sort((a, b) => a.lport - b.lport)).toEqual([
        { clientId: 't-full', id: 1, lport: 20_500 },
        { clientId: 't-other', id: 1, lport: 30_000 },
        { clientId: 't-full', id: 2, lport: 65_535 },
      ]);

      expect(await tunnels.delete('t-full', 1)).toBe(true);
      expect(await tunnels.delete('t-full', 1)).toBe(false);
      expect(await tunnels.listByClient('t-full')).toEqual([full]);
      expect(await tunnels.listByClient('t-other')).toHaveLength(1);
    });

    it('refuses a second tunnel with the same client and id', async () => {
      const tunnels = new SqlTunnelRepository(database);
      await tunnels.insert(tunnel('t-dup', 1));
      await expect(tunnels.insert(tunnel('t-dup', 1, { rport: 23 }))).rejects.toThrow();
      expect(await tunnels.listByClient('t-dup')).toEqual([tunnel('t-dup', 1)]);
    });

    it('go with their client: delete and the purge of disconnected clients', async () => {
      const clients = new SqlClientRepository(database);
      const tunnels = new SqlTunnelRepository(database);
      await saveClient(clients, 'p-deleted', 1_000);
      await saveClient(clients, 'p-stale', 1_000);
      await saveClient(clients, 'p-recent', 5_000);
      await saveClient(clients, 'p-connected', null);
      for (const id of ['p-deleted', 'p-stale', 'p-recent', 'p-connected']) {
        await tunnels.insert(tunnel(id, 1));
        await tunnels.insert(tunnel(id, 2));
      }
      expect(await clients.delete('p-deleted')).toBe(true);
      expect(await tunnels.listByClient('p-deleted')).toEqual([]);
      expect(await tunnels.listByClient('p-stale')).toHaveLength(2);

      expect(await clients.deleteDisconnectedBefore(2_000)).toBe(1);
      expect(await tunnels.listByClient('p-stale')).toEqual([]);
      expect(await tunnels.listByClient('p-recent')).toHaveLength(2);
      expect(await tunnels.listByClient('p-connected')).toHaveLength(2);
    });
  });

  describe('library scripts', () => {
    let scriptCounter = 0;
    const newScript = (overrides: Partial<LibraryScript> = {}): LibraryScript => {
      scriptCounter += 1;
      const createdAt = new Date(Date.UTC(2031, 0, 1, 0, 0, scriptCounter, 7)).toISOString();
      return {
        id: `10000000-0000-4000-8000-${String(scriptCounter).padStart(12, '0')}`,
        name: `script ${scriptCounter}`,
        interpreter: '',
        is_sudo: false,
        cwd: '',
        script: 'echo hello\n',
        tags: [],
        timeout_sec: 60,
        created_by: 'alice',
        created_at: createdAt,
        updated_by: 'alice',
        updated_at: createdAt,
        ...overrides,
      };
    };
    const conflictOf = async (promise: Promise<unknown>) => {
      const err = await rejection(promise);
      expect(err.kind).toBe('conflict');
      expect(err.code).toBe(ERROR_CODES.libraryScriptExists);
      return err;
    };

    it('stores every field: unicode, 160 KiB of script text, times past 2038 to the millisecond', async () => {
      const library = new SqlLibraryScriptRepository(database);
      const full = newScript({
        name: `${'n'.repeat(190)} Zoë 用户 😀`,
        interpreter: '/usr/local/bin/python3',
        is_sudo: true,
        cwd: '/var/tmp/ünïcode',
        script: `#!/bin/sh\n${'é'.repeat(MAX_SCRIPT_BYTES / 2 - 6)}`,
        tags: ['Zoë', '用户 😀', 't'.repeat(100), ...Array.from({ length: 97 }, (_, i) => `tag-${i}`)],
        timeout_sec: 31 * 24 * 3600,
        created_by: 'Zoë 用户 😀',
        created_at: '2100-01-01T00:00:00.123Z',
        updated_by: 'Ünïcode Bob',
        updated_at: '2100-01-02T00:00:00.456Z',
      });
      await library.insert(full);
      expect(await library.get(full.id)).toEqual(full);
      expect(await library.get('10000000-0000-4000-8000-ffffffffffff')).toBeUndefined();
    });

    it('replaces all fields but id and created_*, also with unchanged values; deletes once', async () => {
      const library = new SqlLibraryScriptRepository(database);
      const script = newScript();
      await library.insert(script);
      const changed = {
        ...script,
        name: `${script.name} v2`,
        interpreter: 'powershell',
        is_sudo: true,
        cwd: 'C:\\Temp',
        script: 'Write-Output 1',
        tags: ['windows', 'daily'],
        timeout_sec: 5,
        updated_by: 'bob',
        updated_at: '2099-12-31T23:59:59.999Z',
      };
      expect(await library.replace(changed)).toBe(true);
      expect(await library.get(script.id)).toEqual(changed);
      // MySQL counts unchanged rows as not affected unless asked to count found rows.
      expect(await library.replace(changed)).toBe(true);
      expect(await library.replace({ ...changed, id: '10000000-0000-4000-8000-eeeeeeeeeeee' })).toBe(false);

      expect(await library.delete(script.id)).toBe(true);
      expect(await library.delete(script.id)).toBe(false);
      expect(await library.get(script.id)).toBeUndefined();
      expect(await library.replace(changed)).toBe(false);
    });

    it('reads a row with NULL in the columns of migration 012 with their defaults; filters by updated_*', async () => {
      const library = new SqlLibraryScriptRepository(database);
      const old = newScript({ name: 'from-before-012', created_by: 'old-carol' });
      await database.db
        .insertInto('library_scripts')
        .values({
          id: old.id,
          name: old.name,
          interpreter: '',
          is_sudo: 0,
          cwd: '',
          script: old.script,
          created_by: old.created_by,
          created_at: Date.parse(old.created_at),
          tags: null,
          timeout_sec: null,
          updated_by: null,
          updated_at: null,
        })
        .execute();
      expect(await library.get(old.id)).toEqual({ ...old, updated_by: 'old-carol' });
      const changed = newScript({
        name: 'updated-later',
        updated_by: 'dave',
        updated_at: '2040-05-05T05:05:05.005Z',
      });
      await library.insert(changed);
      const list = async (query: Record<string, string>) =>
        (await library.list(parseListQuery(query, LIBRARY_SCRIPT_LIST))).data.map((s) => s.name);
      expect(await list({ 'filter[updated_by]': 'dave,old-*' })).toEqual(['updated-later']);
      expect(await list({ 'filter[updated_at]': '2040-05', sort: '-updated_at' })).toEqual(['updated-later']);
      expect(await library.delete(old.id)).toBe(true);
      expect(await library.delete(changed.id)).toBe(true);
    });

    it('keeps names unique, case-sensitively, on insert and on replace', async () => {
      const library = new SqlLibraryScriptRepository(database);
      const first = newScript({ name: 'Unique Name' });
      const second = newScript({ name: 'unique name' });
      await library.insert(first);
      await library.insert(second);
      const clash = await conflictOf(library.insert(newScript({ name: 'Unique Name' })));
      expect(clash.message).toContain('Unique Name');
      await conflictOf(library.replace({ ...second, name: 'Unique Name' }));
      expect(await library.get(second.id)).toEqual(second);
      // After a delete the name is free again.
      expect(await library.delete(first.id)).toBe(true);
      expect(await library.replace({ ...second, name: 'Unique Name' })).toBe(true);
    });

    it('lists with sort, filters (wildcards, created_at periods) and pages; count before paging', async () => {
      const library = new SqlLibraryScriptRepository(database);
      const ids: Record<string, string> = {};
      const seed: [string, string, string][] = [
        ['list-alpha', 'bob', '2032-03-01T10:00:00.000Z'],
        ['list-Beta', 'alice', '2032-03-01T23:59:59.999Z'],
        ['list-gamma 50%', 'carol', '2032-03-02T00:00:00.000Z'],
        ['list-delta', 'bob', '2032-04-15T08:30:00.500Z'],
      ];
      for (const [name, created_by, created_at] of seed) {
        const script = newScript({ name, created_by, created_at });
        ids[name] = script.id;
        await library.insert(script);
      }
      const names = async (query: Record<string, string | string[]>) =>
        (
          await library.list(parseListQuery({ 'filter[name]': 'list-*', ...query }, LIBRARY_SCRIPT_LIST))
        ).data.map((s) => s.name);

      expect(await names({})).toEqual(['list-alpha', 'list-Beta', 'list-delta', 'list-gamma 50%']);
      expect(await names({ sort: '-name' })).toEqual([
        'list-gamma 50%',
        'list-delta',
        'list-Beta',
        'list-alpha',
      ]);
      expect(await names({ sort: ['created_by', '-created_at'] })).toEqual([
        'list-Beta',
        'list-delta',
        'list-alpha',
        'list-gamma 50%',
      ]);
      expect(await names({ sort: '-created_at' })).toEqual([
        'list-delta',
        'list-gamma 50%',
        'list-Beta',
        'list-alpha',
      ]);
      expect(await names({ sort: 'id' })).toEqual(
        Object.entries(ids)
          .sort(([, a], [, b]) => (a < b ? -1 : 1))
          .map(([name]) => name),
      );

      expect(await names({ 'filter[name]': '*ETA' })).toEqual(['list-Beta']);
      expect(await names({ 'filter[name]': '*50%' })).toEqual(['list-gamma 50%']);
      expect(await names({ 'filter[name]': '*5%' })).toEqual([]);
      expect(await names({ 'filter[created_by]': 'bob,CAROL' })).toEqual([
        'list-alpha',
        'list-delta',
        'list-gamma 50%',
      ]);
      expect(await names({ 'filter[id]': ids['list-delta'] ?? '' })).toEqual(['list-delta']);
      expect(await names({ 'filter[created_at]': '2032-03-01' })).toEqual(['list-alpha', 'list-Beta']);
      expect(await names({ 'filter[created_at]': '2032-03' })).toEqual([
        'list-alpha',
        'list-Beta',
        'list-gamma 50%',
      ]);
      expect(await names({ 'filter[created_at]': '2032-03-02T01:00+01:00' })).toEqual(['list-gamma 50%']);
      expect(await names({ 'filter[created_at]': '2032-04-15T08:30:00.500Z,2032-03-01T10*' })).toEqual([
        'list-alpha',
        'list-delta',
      ]);
      expect(await names({ 'filter[created_at]': '2032-04-15T08:30:00.499Z' })).toEqual([]);
      expect(
        await names({ 'filter[created_by]': 'bob', 'filter[created_at]': '2032-03', sort: '-name' }),
      ).toEqual(['list-alpha']);

      const page = await library.list(
        parseListQuery(
          { 'filter[name]': 'list-*', sort: '-created_at', 'page[limit]': '2', 'page[offset]': '1' },
          LIBRARY_SCRIPT_LIST,
        ),
      );
      expect(page.count).toBe(4);
      expect(page.data.map((s) => s.name)).toEqual(['list-gamma 50%', 'list-Beta']);
      expect(page.data[0]).toEqual(await library.get(ids['list-gamma 50%'] ?? ''));
    });
  });

  describe('vault', () => {
    let vault: VaultStorage;
    beforeAll(async () => {
      vault = await openVaultStorage(database, testDb.settings, testDb.dataDir);
    });
    afterAll(() => vault?.close());

    const entry = (overrides: Partial<NewVaultEntry> = {}): NewVaultEntry => ({
      client_id: '',
      required_group: '',
      key: 'k',
      value: 'AXNlYWxlZA==',
      type: 'secret',
      created_at: 4_102_444_800_123,
      updated_at: 4_102_444_800_123,
      created_by: 'Zoë 用户 😀',
      updated_by: 'Zoë 用户 😀',
      ...overrides,
    });

    it('migrates in its own migration table, again without change', async () => {
      const again = await openVaultStorage(database, testDb.settings, testDb.dataDir);
      await again.close();
      if (engine === 'sqlite') {
        const file = vaultFile(testDb.settings.db_name, testDb.dataDir);
        expect(file).toBe(join(dirname(sqliteFile(testDb.settings.db_name, testDb.dataDir)), 'vault.db'));
        expect(existsSync(file)).toBe(true);
      } else {
        const rows = await database.db
          .withTables<{ svcd_vault_migrations: { name: string } }>()
          .selectFrom('svcd_vault_migrations')
          .select('name')
          .execute();
        expect(rows.map((r) => r.name)).toEqual(['001_vault']);
      }
    });

    it('keeps one key record: the first save wins', async () => {
      expect(await vault.repository.readKey()).toBeUndefined();
      const record = {
        kdf: { algorithm: 'scrypt' as const, N: 1024, r: 8, p: 1 },
        salt: Buffer.alloc(16, 7),
        wrappedKey: Buffer.alloc(60, 9),
      };
      expect(await vault.repository.saveKey(record, 'admin', 1_700_000_000_000)).toBe(true);
      expect(await vault.repository.saveKey({ ...record, salt: Buffer.alloc(16, 1) }, 'other', 1)).toBe(
        false,
      );
      expect(await vault.repository.readKey()).toEqual(record);
    });

    it('stores entries with integer ids, keeps (client_id, key) unique, updates and deletes', async () => {
      const repo = vault.repository;
      const a = await repo.insert(entry({ key: 'c-a' }));
      const b = await repo.insert(entry({ key: 'c-a', client_id: 'client-1', type: 'text' }));
      expect(typeof a).toBe('number');
      expect(b).toBe((a as number) + 1);
      expect(await repo.insert(entry({ key: 'c-a' }))).toBe('duplicate');
      expect(await repo.get(b as number)).toEqual({
        id: b,
        ...entry({ key: 'c-a', client_id: 'client-1', type: 'text' }),
      });
      expect(await repo.get(999_999)).toBeUndefined();

      const change = {
        client_id: 'client-1',
        required_group: 'Team',
        key: 'c-b',
        value: 'bmV3',
        type: 'markdown' as const,
        updated_at: 4_102_444_800_999,
        updated_by: 'bob',
      };
      expect(await repo.update(b as number, change)).toBe('updated');
      expect(await repo.get(b as number)).toMatchObject({ ...change, created_by: 'Zoë 用户 😀' });
      expect(await repo.update(b as number, { ...change, client_id: '', key: 'c-a' })).toBe('duplicate');
      expect(await repo.update(999_999, change)).toBe('missing');

      expect(await repo.delete(a as number)).toBe(true);
      expect(await repo.delete(a as number)).toBe(false);
      expect(await repo.delete(b as number)).toBe(true);
    });

    it('lists the five list fields only, filtered, sorted and paged', async () => {
      const repo = vault.repository;
      const ids: number[] = [];
      for (const [client_id, key, at] of [
        ['l-2', 'Beta', 3],
        ['l-1', 'alpha', 2],
        ['l-3', 'gamma', 1],
      ] as const) {
        ids.push(
          (await repo.insert(entry({ client_id, key, created_at: at, created_by: 'lister' }))) as number,
        );
      }
      const query = parseListQuery(
        { 'filter[created_by]': 'lister', sort: 'key', 'page[limit]': '2' },
        VAULT_LIST,
      );
      const { data, count } = await repo.list(query);
      expect(count).toBe(3);
      expect(data).toEqual([
        {
          id: ids[1],
          client_id: 'l-1',
          created_by: 'lister',
          created_at: new Date(2).toISOString(),
          key: 'alpha',
        },
        {
          id: ids[0],
          client_id: 'l-2',
          created_by: 'lister',
          created_at: new Date(3).toISOString(),
          key: 'Beta',
        },
      ]);
      const byDate = await repo.list(
        parseListQuery({ 'filter[client_id]': 'l-*', sort: '-created_at' }, VAULT_LIST),
      );
      expect(byDate.data.map((e) => e.key)).toEqual(['Beta', 'alpha', 'gamma']);
      for (const id of ids) await repo.delete(id);
    });

    it('reads by id what another opening of the same storage wrote, changed and deleted; never a stale row', async () => {
      // Another svcd node on PostgreSQL/MySQL, another handle on the same vault.db with SQLite.
      const other = await openVaultStorage(database, testDb.settings, testDb.dataDir);
      try {
        const id = (await other.repository.insert(entry({ key: 'shared' }))) as number;
        expect(await vault.repository.get(id)).toMatchObject({ key: 'shared', value: 'AXNlYWxlZA==' });
        const change = { ...entry({ key: 'shared' }), value: 'b3RoZXI=', updated_by: 'node-2' };
        expect(await other.repository.update(id, change)).toBe('updated');
        expect(await vault.repository.get(id)).toMatchObject({ value: 'b3RoZXI=', updated_by: 'node-2' });
        expect(await other.repository.delete(id)).toBe(true);
        expect(await vault.repository.get(id)).toBeUndefined();
      } finally {
        await other.close();
      }
    });

    // PostgreSQL/MySQL share svcd's pool, which the vault's close() leaves open; SQLite's vault file closes.
    const sqliteOnly = engine === 'sqlite' ? it : () => undefined;
    sqliteOnly('a read by id after close answers "unavailable"', async () => {
      const closing = await openVaultStorage(database, testDb.settings, testDb.dataDir);
      await closing.close();
      await expect(closing.repository.get(1)).rejects.toMatchObject({
        code: ERROR_CODES.storageUnavailable,
      });
    });
  });

  describe('two-factor logins and TOTP secrets', () => {
    it('a pending login counts attempts up to the limit and is consumed once', async () => {
      const store = new SqlPendingLoginStore(database);
      const login = {
        sessionId: `s-${engine}-1`,
        username: 'ålice',
        codeHash: 'ab'.repeat(32),
        codeExpiresAt: new Date(1_700_000_600_000),
        attempts: 0,
        tokenLifetimeS: 3600,
        expiresAt: new Date(1_700_000_600_000),
      };
      await store.create(login);
      expect(await store.find(login.sessionId)).toEqual(login);
      expect(await store.countAttempt(login.sessionId, 2)).toBe(true);
      expect(await store.countAttempt(login.sessionId, 2)).toBe(true);
      expect(await store.countAttempt(login.sessionId, 2)).toBe(false);
      expect((await store.find(login.sessionId))?.attempts).toBe(2);
      const [first, second] = await Promise.all([
        store.consume(login.sessionId),
        store.consume(login.sessionId),
      ]);
      expect([first, second].filter(Boolean)).toHaveLength(1);
      expect(await store.find(login.sessionId)).toBeUndefined();
      await store.create({
        ...login,
        sessionId: `s-${engine}-2`,
        codeHash: null,
        codeExpiresAt: null,
        tokenLifetimeS: null,
      });
      expect(await store.purgeExpired(new Date(1_700_000_599_999))).toBe(0);
      expect(await store.purgeExpired(new Date(1_700_000_600_000))).toBe(1);
    });

    it('a TOTP secret is created once per user, steps only move forward, and it can be deleted', async () => {
      const store = new SqlTotpSecretStore(database);
      const record = {
        username: 'bøb',
        secret: 'JBSWY3DPEHPK3PXP',
        lastUsedStep: null,
        createdAt: new Date(1_700_000_000_000),
      };
      expect(await store.create(record)).toBe(true);
      expect(await store.create({ ...record, secret: 'OTHER' })).toBe(false);
      expect(await store.find('bøb')).toEqual(record);
      expect(await store.find('BØB')).toBeUndefined();
      expect(await store.markUsed('bøb', 56_666_667)).toBe(true);
      expect(await store.markUsed('bøb', 56_666_667)).toBe(false);
      expect(await store.markUsed('bøb', 56_666_666)).toBe(false);
      expect(await store.markUsed('bøb', 56_666_668)).toBe(true);
      expect((await store.find('bøb'))?.lastUsedStep).toBe(56_666_668);
      expect(await store.delete('bøb')).toBe(true);
      expect(await store.delete('bøb')).toBe(false);
      expect(await store.markUsed('bøb', 56_666_669)).toBe(false);
    });
  });

  describe('client groups', () => {
    const params = (raw: Record<string, unknown>) => clientGroupParamsSchema.parse(raw);
    const group = (id: string, description = '', raw: Record<string, unknown> = { tag: ['web'] }) => ({
      id,
      description,
      params: params(raw),
    });

    it('stores a group with its params as given, unicode and and/or objects included', async () => {
      const repo = new SqlClientGroupRepository(database);
      const stored = group('g-store', 'Städte 用户 😀', {
        tag: { and: ['web', 'prod*'] },
        labels: ['city : Köln'],
        ipv4: ['10.*'],
      });
      await repo.insert(stored);
      expect(await repo.get('g-store')).toEqual(stored);
      expect(await repo.get('G-STORE')).toBeUndefined();
      expect(await repo.get('g-missing')).toBeUndefined();
    });

    it('refuses a duplicate id with 409 ERR_CLIENT_GROUP_EXISTS and keeps the first', async () => {
      const repo = new SqlClientGroupRepository(database);
      await repo.insert(group('g-dup', 'first'));
      const err = await rejection(repo.insert(group('g-dup', 'second')));
      expect(err.kind).toBe('conflict');
      expect(err.code).toBe(ERROR_CODES.clientGroupExists);
      expect((await repo.get('g-dup'))?.description).toBe('first');
    });

    it('updates (also to the same values) and deletes, false for an unknown id', async () => {
      const repo = new SqlClientGroupRepository(database);
      await repo.insert(group('g-upd', 'before'));
      const changed = group('g-upd', 'after', { name: ['x*'] });
      expect(await repo.update(changed)).toBe(true);
      expect(await repo.update(changed)).toBe(true);
      expect(await repo.get('g-upd')).toEqual(changed);
      expect(await repo.update(group('g-nothing'))).toBe(false);
      expect(await repo.delete('g-upd')).toBe(true);
      expect(await repo.delete('g-upd')).toBe(false);
      expect(await repo.get('g-upd')).toBeUndefined();
    });

    it('reads several by id, all, and lists with filter, sort and pages', async () => {
      const repo = new SqlClientGroupRepository(database);
      await database.db.deleteFrom('client_groups').execute();
      for (const [id, description] of [
        ['l-b', 'Berlin servers'],
        ['L-a', 'cologne servers'],
        ['l-c', 'Databases'],
      ] as const) {
        await repo.insert(group(id, description));
      }
      const many = await repo.getMany(['l-c', 'L-a', 'l-unknown', 'l-A']);
      expect(many.map((g) => g.id).sort()).toEqual(['L-a', 'l-c']);
      expect((await repo.all()).map((g) => g.id).sort()).toEqual(['L-a', 'l-b', 'l-c']);

      const list = (raw: Record<string, string>) =>
        repo.list(parseListQuery(raw, CLIENT_GROUP_LIST)).then((r) => ({
          ids: r.data.map((g) => g.id),
          count: r.count,
        }));
      expect(await list({})).toEqual({ ids: ['L-a', 'l-b', 'l-c'], count: 3 });
      expect(await list({ sort: '-description' })).toEqual({ ids: ['l-c', 'L-a', 'l-b'], count: 3 });
      expect(await list({ 'filter[description]': '*SERVERS' })).toEqual({ ids: ['L-a', 'l-b'], count: 2 });
      expect(await list({ 'filter[id]': 'l-a,l-c' })).toEqual({ ids: ['L-a', 'l-c'], count: 2 });
      expect(await list({ 'page[limit]': '1', 'page[offset]': '1' })).toEqual({ ids: ['l-b'], count: 3 });
    });
  });

  describe('API tokens', () => {
    // Beyond 2^32 ms and 2038: the time columns must be BIGINT on every engine.
    const token = (prefix: string, username: string, name: string): ApiTokenRecord => ({
      prefix,
      username,
      name,
      scope: 'read',
      secretHash: 'ab'.repeat(32),
      createdAt: new Date('2030-01-01T00:00:00Z'),
      expiresAt: new Date('2100-01-01T00:00:00.123Z'),
    });

    it('stores, finds by prefix, lists per user and keeps unicode names and exact times', async () => {
      const repo = new SqlApiTokenRepository(database);
      const stored = { ...token('AbCd1234', 'tok-alice', 'CI 用户 😀'), scope: 'clients-auth' as const };
      expect(await repo.insert(stored)).toBe('inserted');
      await repo.insert(token('EfGh5678', 'tok-alice', 'second'));
      await repo.insert(token('IjKl9012', 'tok-bob', 'second'));
      expect(await repo.findByPrefix('AbCd1234')).toEqual(stored);
      // Prefixes are case-sensitive on every engine (MySQL's binary collation).
      expect(await repo.findByPrefix('abcd1234')).toBeUndefined();
      const names = (await repo.listOf('tok-alice')).map((t) => t.name).sort();
      expect(names).toEqual(['CI 用户 😀', 'second'].sort());
      expect(await repo.listOf('TOK-ALICE')).toEqual([]);
    });

    it('refuses a second token of one name per user, and tells a prefix clash apart', async () => {
      const repo = new SqlApiTokenRepository(database);
      await repo.insert(token('dup00001', 'tok-carol', 'ci'));
      const err = await rejection(repo.insert(token('dup00002', 'tok-carol', 'ci')));
      expect(err.code).toBe(ERROR_CODES.apiTokenExists);
      expect(await repo.insert(token('dup00001', 'tok-dave', 'other'))).toBe('prefix-taken');
      expect(await repo.insert(token('dup00003', 'tok-dave', 'ci'))).toBe('inserted');
      expect(await repo.findByPrefix('dup00002')).toBeUndefined();
    });

    it('updates name and expiry of the owner only; a name clash is refused and changes nothing', async () => {
      const repo = new SqlApiTokenRepository(database);
      await repo.insert(token('upd00001', 'tok-erin', 'one'));
      await repo.insert(token('upd00002', 'tok-erin', 'two'));
      const later = new Date('2101-02-03T04:05:06Z');
      const updated = await repo.update('tok-erin', 'upd00001', { name: 'uno', expiresAt: later });
      expect(updated).toEqual({ ...token('upd00001', 'tok-erin', 'uno'), expiresAt: later });
      // Same values again: MySQL reports no changed row, the token is still found.
      expect(await repo.update('tok-erin', 'upd00001', { name: 'uno' })).toEqual(updated);
      expect(await repo.update('tok-frank', 'upd00001', { name: 'mine' })).toBeUndefined();
      const clash = await rejection(repo.update('tok-erin', 'upd00002', { name: 'uno' }));
      expect(clash.code).toBe(ERROR_CODES.apiTokenExists);
      expect((await repo.findByPrefix('upd00002'))?.name).toBe('two');
    });

    it('stores when a token was last used (none until then), exactly, beyond 2038', async () => {
      const repo = new SqlApiTokenRepository(database);
      await repo.insert(token('use00001', 'tok-ivy', 'used'));
      await repo.insert(token('use00002', 'tok-ivy', 'unused'));
      expect((await repo.findByPrefix('use00001'))?.lastUsedAt).toBeUndefined();
      const at = new Date('2099-05-06T07:08:09.123Z');
      await repo.markUsed('use00001', at);
      expect(await repo.findByPrefix('use00001')).toEqual({
        ...token('use00001', 'tok-ivy', 'used'),
        lastUsedAt: at,
      });
      const later = new Date('2099-05-06T07:09:10Z');
      await repo.markUsed('use00001', later);
      const listed = await repo.listOf('tok-ivy');
      expect(Object.fromEntries(listed.map((t) => [t.prefix, t.lastUsedAt]))).toEqual({
        use00001: later,
        use00002: undefined,
      });
      await repo.markUsed('unknown1', at);
    });

    it('deletes one token of its owner only', async () => {
      const repo = new SqlApiTokenRepository(database);
      await repo.insert(token('del00001', 'tok-gina', 'a'));
      await repo.insert(token('del00002', 'tok-gina', 'b'));
      expect(await repo.delete('tok-hank', 'del00001')).toBe(false);
      expect(await repo.delete('tok-gina', 'del00001')).toBe(true);
      expect(await repo.delete('tok-gina', 'del00001')).toBe(false);
      expect((await repo.listOf('tok-gina')).map((t) => t.prefix)).toEqual(['del00002']);
    });
  });

  describe('saved views', () => {
    const view = (id: string, username: string, name: string): SavedViewRecord => ({
      id,
      username,
      name,
      page: 'clients',
      search: 'state=connected&tags=linux%2Cweb',
      columns: ['name', 'os', 'tags'],
      sort: '-connection_state',
      // Beyond 2^32 ms and 2038: the time columns must be BIGINT on every engine.
      createdAt: new Date('2100-01-01T00:00:00.123Z'),
      updatedAt: new Date('2100-01-01T00:00:00.123Z'),
    });

    it('stores, finds, lists and counts per user, keeping unicode names, columns in order and exact times', async () => {
      const repo = new SqlSavedViewRepository(database);
      const stored = { ...view('View_A-1', 'sv-alice', 'Linux 用户 😀'), columns: ['tags', 'name', 'id'] };
      expect(await repo.insert(stored)).toBe('inserted');
      await repo.insert(view('View_A-2', 'sv-alice', 'second'));
      await repo.insert(view('View_B-1', 'sv-bob', 'second'));
      expect(await repo.find('sv-alice', 'View_A-1')).toEqual(stored);
      // Ids are case-sensitive on every engine (MySQL's binary collation), and another user's view is not found.
      expect(await repo.find('sv-alice', 'view_a-1')).toBeUndefined();
      expect(await repo.find('sv-bob', 'View_A-1')).toBeUndefined();
      expect((await repo.listOf('sv-alice')).map((v) => v.name).sort()).toEqual(
        ['Linux 用户 😀', 'second'].sort(),
      );
      expect(await repo.countOf('sv-alice')).toBe(2);
      expect(await repo.countOf('sv-nobody')).toBe(0);
      expect(await repo.listOf('SV-ALICE')).toEqual([]);
    });

    it('refuses a second view of one name per user, and tells an id clash apart', async () => {
      const repo = new SqlSavedViewRepository(database);
      await repo.insert(view('dupv0001', 'sv-carol', 'mine'));
      const err = await rejection(repo.insert(view('dupv0002', 'sv-carol', 'mine')));
      expect(err.code).toBe(ERROR_CODES.savedViewExists);
      expect(await repo.insert(view('dupv0001', 'sv-dave', 'other'))).toBe('id-taken');
      expect(await repo.insert(view('dupv0003', 'sv-dave', 'mine'))).toBe('inserted');
      expect(await repo.find('sv-carol', 'dupv0002')).toBeUndefined();
    });

    it('updates fields of the owner only; a name clash is refused and changes nothing', async () => {
      const repo = new SqlSavedViewRepository(database);
      await repo.insert(view('updv0001', 'sv-erin', 'one'));
      await repo.insert(view('updv0002', 'sv-erin', 'two'));
      const later = new Date('2101-02-03T04:05:06.789Z');
      const changes = { name: 'uno', search: 'q=db', columns: [], sort: '', updatedAt: later };
      const updated = await repo.update('sv-erin', 'updv0001', changes);
      expect(updated).toEqual({
        ...view('updv0001', 'sv-erin', 'uno'),
        search: 'q=db',
        columns: [],
        sort: '',
        updatedAt: later,
      });
      // Same values again: MySQL reports no changed row, the view is still found.
      expect(await repo.update('sv-erin', 'updv0001', changes)).toEqual(updated);
      expect(await repo.update('sv-frank', 'updv0001', { name: 'mine', updatedAt: later })).toBeUndefined();
      const clash = await rejection(repo.update('sv-erin', 'updv0002', { name: 'uno', updatedAt: later }));
      expect(clash.code).toBe(ERROR_CODES.savedViewExists);
      expect((await repo.find('sv-erin', 'updv0002'))?.name).toBe('two');
    });

    it('deletes one view of its owner only', async () => {
      const repo = new SqlSavedViewRepository(database);
      await repo.insert(view('delv0001', 'sv-gina', 'a'));
      await repo.insert(view('delv0002', 'sv-gina', 'b'));
      expect(await repo.delete('sv-hank', 'delv0001')).toBe(false);
      expect(await repo.delete('sv-gina', 'delv0001')).toBe(true);
      expect(await repo.delete('sv-gina', 'delv0001')).toBe(false);
      expect((await repo.listOf('sv-gina')).map((v) => v.id)).toEqual(['delv0002']);
    });
  });

  describe("a deleted user's leftovers", () => {
    it('removes API tokens, saved views, the TOTP secret and pending logins of that user only', async () => {
      const tokens = new SqlApiTokenRepository(database);
      const views = new SqlSavedViewRepository(database);
      const totp = new SqlTotpSecretStore(database);
      const pending = new SqlPendingLoginStore(database);
      for (const username of ['gone-ivy', 'kept-jo']) {
        await tokens.insert({
          prefix: `${username.slice(0, 4)}0001`,
          username,
          name: 'ci',
          scope: 'read',
          secretHash: 'cd'.repeat(32),
          createdAt: new Date(1_700_000_000_000),
          expiresAt: new Date('2100-01-01T00:00:00Z'),
        });
        await views.insert({
          id: `${username}-v`,
          username,
          name: 'mine',
          page: 'clients',
          search: '',
          columns: [],
          sort: '',
          createdAt: new Date(0),
          updatedAt: new Date(0),
        });
        await totp.create({
          username,
          secret: 'JBSWY3DPEHPK3PXP',
          lastUsedStep: null,
          createdAt: new Date(0),
        });
        await pending.create({
          sessionId: `left-${engine}-${username}`,
          username,
          codeHash: null,
          codeExpiresAt: null,
          attempts: 0,
          tokenLifetimeS: null,
          expiresAt: new Date(1_700_000_600_000),
        });
      }
      await deleteUserLeftovers(database, 'gone-ivy');
      expect(await tokens.listOf('gone-ivy')).toEqual([]);
      expect(await views.listOf('gone-ivy')).toEqual([]);
      expect(await views.listOf('kept-jo')).toHaveLength(1);
      expect(await totp.find('gone-ivy')).toBeUndefined();
      expect(await pending.find(`left-${engine}-gone-ivy`)).toBeUndefined();
      expect(await tokens.listOf('kept-jo')).toHaveLength(1);
      expect(await totp.find('kept-jo')).toBeDefined();
      expect(await pending.find(`left-${engine}-kept-jo`)).toBeDefined();
    });
  });
});
