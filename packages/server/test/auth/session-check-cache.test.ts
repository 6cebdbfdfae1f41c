import { afterEach, beforeEach, expect, test } from 'vitest';
import { CachedSessionStore } from '../../src/core/auth/session-check-cache.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { SqlSessionStore } from '../../src/storage/session-store.js';
import { createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';

let testDb: TestDatabase;
let database: Database;
let sql: SqlSessionStore;
const hour = 3600_000;

beforeEach(async () => {
  testDb = await createTestDatabase('sqlite');
  database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
  sql = new SqlSessionStore(database);
  const now = Date.now();
  for (const id of ['s1', 's2']) {
    await sql.create({ id, username: 'u', createdAt: new Date(now), expiresAt: new Date(now + hour) });
  }
});
afterEach(async () => {
  await database.close();
  await testDb.drop();
});

test('a logout through the cache takes effect at once', async () => {
  const cached = new CachedSessionStore(sql, { ttlMs: 60_000 });
  expect(await cached.isActive('s1', new Date())).toBe(true);
  expect(await cached.revoke('s1')).toBe(true);
  expect(await cached.isActive('s1', new Date())).toBe(false);
  expect(await sql.isActive('s1', new Date())).toBe(false);
});

test('a revocation elsewhere (another node) is seen once the TTL has passed; unknown ids are never cached', async () => {
  const cached = new CachedSessionStore(sql, { ttlMs: 1000 });
  const t0 = Date.now();
  expect(await cached.isActive('s2', new Date(t0))).toBe(true);
  await sql.revoke('s2');
  expect(await cached.isActive('s2', new Date(t0 + 999))).toBe(true);
  expect(await cached.isActive('s2', new Date(t0 + 1000))).toBe(false);
  expect(await cached.isActive('nope', new Date(t0))).toBe(false);
  await sql.create({ id: 'nope', username: 'u', createdAt: new Date(t0), expiresAt: new Date(t0 + hour) });
  expect(await cached.isActive('nope', new Date(t0))).toBe(true);
});

test('the cache stays within maxEntries', async () => {
  const cached = new CachedSessionStore(sql, { ttlMs: 60_000, maxEntries: 1 });
  const now = new Date();
  expect(await cached.isActive('s1', now)).toBe(true);
  expect(await cached.isActive('s2', now)).toBe(true);
  // s1 was evicted, so revoking it underneath is seen at once.
  await sql.revoke('s1');
  expect(await cached.isActive('s1', now)).toBe(false);
});
