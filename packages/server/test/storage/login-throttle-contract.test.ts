import { AppError } from '@svc/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_ENGINES, createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import { LoginGuard } from '../../src/core/auth/login-guard.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { sqlLoginThrottleStore } from '../../src/storage/login-throttle-store.js';

const NOW = Date.UTC(2031, 5, 15, 12);
const clock = { now: () => new Date(NOW) };

describe.each(ALL_ENGINES)('storage contract on %s: login throttle', (engine) => {
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

  it('keeps records by set and key until they expire; a write replaces, a delete forgets', async () => {
    const store = sqlLoginThrottleStore(database);
    await store.addresses.set('192.0.2.1', { count: 2, bannedUntil: 0 }, NOW + 1000, NOW);
    await store.users.set('192.0.2.1', { windowStart: NOW, count: 7 }, NOW + 1000, NOW);
    const key = `${'u'.repeat(150)}\n2001:db8::ffff:ffff:ffff:ffff`;
    await store.userAtAddress.set(key, { retryAt: NOW + 2000, lastSuccessAt: 0 }, NOW + 5000, NOW);
    expect(await store.addresses.get('192.0.2.1', NOW)).toEqual({ count: 2, bannedUntil: 0 });
    expect(await store.users.get('192.0.2.1', NOW)).toEqual({ windowStart: NOW, count: 7 });
    expect(await store.userAtAddress.get(key, NOW)).toEqual({ retryAt: NOW + 2000, lastSuccessAt: 0 });

    await store.addresses.set('192.0.2.1', { count: 3, bannedUntil: NOW + 600_000 }, NOW + 600_000, NOW);
    expect(await store.addresses.get('192.0.2.1', NOW)).toEqual({ count: 3, bannedUntil: NOW + 600_000 });
    expect(await store.users.get('192.0.2.1', NOW + 1000)).toBeUndefined();
    await store.userAtAddress.delete(key);
    expect(await store.userAtAddress.get(key, NOW)).toBeUndefined();
    expect(await store.addresses.get('192.0.2.9', NOW)).toBeUndefined();
  });

  it('a ban one node decides holds on another node sharing the database', async () => {
    const settings = { maxFailedLogin: 3, banTimeMs: 600_000, userLoginWaitMs: 0 };
    const nodeA = new LoginGuard(settings, clock, sqlLoginThrottleStore(database));
    const nodeB = new LoginGuard(settings, clock, sqlLoginThrottleStore(database));
    const ip = '198.51.100.7';
    await nodeA.recordFailure(ip, 'alice');
    await nodeB.recordFailure(ip, 'bob');
    await nodeA.recordFailure(ip, 'carol');
    const refused = await nodeB.assertMayTry(ip, 'dave').then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).kind).toBe('banned');
  });
});
