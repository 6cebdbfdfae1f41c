import { afterEach, beforeEach, expect, test } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import { TokenUseStamps, USE_STAMP_INTERVAL_MS } from '../../src/core/api-tokens/token-use-stamps.js';
import { SqlApiTokenRepository } from '../../src/storage/api-token-repository.js';
import { openDatabase, type Database } from '../../src/storage/database.js';

let testDb: TestDatabase;
let database: Database;
let repo: SqlApiTokenRepository;
let writes: number;
let now: number;
const clock = { now: () => new Date(now) };

beforeEach(async () => {
  testDb = await createTestDatabase('sqlite');
  database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
  const sql = new SqlApiTokenRepository(database);
  writes = 0;
  // The real repository, with its writes counted.
  repo = Object.assign(sql, {
    markUsed: (prefix: string, at: Date) => {
      writes += 1;
      return SqlApiTokenRepository.prototype.markUsed.call(sql, prefix, at);
    },
  });
  now = Date.parse('2030-01-01T00:00:00Z');
  await repo.insert({
    prefix: 'busy0001',
    username: 'ci',
    name: 'busy',
    scope: 'read',
    secretHash: 'ab'.repeat(32),
    createdAt: new Date(now),
    expiresAt: new Date(now + 86_400_000),
  });
});

afterEach(async () => {
  await database.close();
  await testDb.drop();
});

/** `count` uses at once, each with the token as read from the database, as the checker does. */
async function useAtOnce(stamps: TokenUseStamps, count: number): Promise<void> {
  const read = await repo.findByPrefix('busy0001');
  if (!read) throw new Error('token gone');
  await Promise.all(Array.from({ length: count }, () => stamps.used(read)));
}

test('a token used 1,000 times a second for three minutes is written about once a minute', async () => {
  const stamps = new TokenUseStamps(repo, clock);
  const start = now;
  for (let second = 0; second < 180; second += 1) {
    now = start + second * 1000;
    await useAtOnce(stamps, 1000);
  }
  expect(writes).toBe(3);
  expect((await repo.findByPrefix('busy0001'))?.lastUsedAt).toEqual(new Date(start + 120_000));
});

test("another node's recent stamp (read with the token) is not written again; an old one is", async () => {
  await repo.markUsed('busy0001', new Date(now - 10_000));
  writes = 0;
  const stamps = new TokenUseStamps(repo, clock);
  await useAtOnce(stamps, 10);
  expect(writes).toBe(0);
  now += USE_STAMP_INTERVAL_MS;
  await useAtOnce(stamps, 10);
  expect(writes).toBe(1);
  expect((await repo.findByPrefix('busy0001'))?.lastUsedAt).toEqual(new Date(now));
});
