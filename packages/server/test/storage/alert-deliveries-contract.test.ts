import { AppError, parseListQuery } from '@svc/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_ENGINES, createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import { ALERT_DELIVERY_LIST } from '../../src/core/alerts/alert-list.js';
import { DeliveryLog } from '../../src/core/alerts/delivery-log.js';
import { realTimers, type NewAlertDelivery } from '../../src/core/alerts/ports.js';
import { SqlAlertDeliveryRepository } from '../../src/storage/alert-delivery-repository.js';
import { openDatabase, type Database } from '../../src/storage/database.js';

const T0 = Date.UTC(2031, 5, 15, 12);

const attempt = (n: number, overrides: Partial<NewAlertDelivery> = {}): NewAlertDelivery => ({
  alert_id: `alert-${n}`,
  rule: 'failed-runs',
  event: 'run_failed',
  channel: 'webhook',
  target: 'https://hooks.example.com/svc',
  attempt: 1,
  at: new Date(T0 + n * 1000).toISOString(),
  outcome: 'delivered',
  http_status: 204,
  error: '',
  ...overrides,
});

const silent = { warn: () => undefined };
const query = (raw: Record<string, string> = {}) => parseListQuery(raw, ALERT_DELIVERY_LIST);

describe.each(ALL_ENGINES)('storage contract on %s: alert delivery log', (engine) => {
  let testDb: TestDatabase;
  let database: Database;
  let repo: SqlAlertDeliveryRepository;

  const logOf = (db: Database, node: string, size = 1000) =>
    new DeliveryLog({
      repository: new SqlAlertDeliveryRepository(db),
      node,
      size,
      timers: realTimers,
      logger: silent,
      flushDelayMs: 1,
    });

  beforeAll(async () => {
    testDb = await createTestDatabase(engine);
    database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
    repo = new SqlAlertDeliveryRepository(database);
  });
  afterAll(async () => {
    await database?.close();
    await testDb?.drop();
  });

  it('stores each attempt and lists newest first with filters, sort, a time period and paging', async () => {
    const log = logOf(database, 'node-a');
    log.add(attempt(1, { outcome: 'retrying', http_status: 500, error: 'the receiver answered HTTP 500' }));
    log.add(attempt(2, { attempt: 2 }));
    log.add(
      attempt(3, {
        channel: 'email',
        target: 'ops@example.com, oncall@example.com',
        http_status: null,
        outcome: 'given_up',
        error: 'connect ECONNREFUSED 127.0.0.1:25 — ünïcode',
      }),
    );
    log.add(attempt(4, { rule: 'Offline', event: 'client_offline' }));
    await log.flush();

    const all = await repo.list(query());
    expect(all.count).toBe(4);
    expect(all.data.map((d) => d.alert_id)).toEqual(['alert-4', 'alert-3', 'alert-2', 'alert-1']);
    expect(all.data[1]).toEqual({
      id: expect.any(Number) as number,
      ...attempt(3, {
        channel: 'email',
        target: 'ops@example.com, oncall@example.com',
        http_status: null,
        outcome: 'given_up',
        error: 'connect ECONNREFUSED 127.0.0.1:25 — ünïcode',
      }),
      node: 'node-a',
    });
    expect(all.data[3]).toMatchObject({ outcome: 'retrying', http_status: 500 });
    const ids = all.data.map((d) => d.id);
    expect([...ids].sort((a, b) => b - a)).toEqual(ids);

    const offline = await repo.list(query({ 'filter[rule]': 'offline' }));
    expect(offline.data.map((d) => d.alert_id)).toEqual(['alert-4']);
    const failed = await repo.list(query({ 'filter[outcome]': 'retrying,given_up', sort: 'at' }));
    expect(failed.data.map((d) => d.alert_id)).toEqual(['alert-1', 'alert-3']);
    const byStatus = await repo.list(query({ 'filter[http_status]': '204' }));
    expect(byStatus.data.map((d) => d.alert_id)).toEqual(['alert-4', 'alert-2']);
    const minute = new Date(T0).toISOString().slice(0, 16);
    expect((await repo.list(query({ 'filter[at]': minute }))).count).toBe(4);
    expect((await repo.list(query({ 'filter[at]': '2031-06-16' }))).count).toBe(0);
    const page = await repo.list(query({ 'page[limit]': '2', 'page[offset]': '1' }));
    expect([page.count, page.data.map((d) => d.alert_id)]).toEqual([4, ['alert-3', 'alert-2']]);
    await log.close();
  });

  it('two nodes sharing the database each list the attempts of both', async () => {
    const other = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
    try {
      const a = logOf(database, 'node-a');
      const b = logOf(other, 'node-b');
      a.add(attempt(10, { alert_id: 'shared-a' }));
      b.add(attempt(11, { alert_id: 'shared-b' }));
      // Each node writes its own attempts; a read of either lists both.
      await Promise.all([a.flush(), b.flush()]);
      for (const log of [a, b]) {
        const listed = await log.list(query({ 'filter[alert_id]': 'shared-*' }));
        expect(listed.data.map((d) => [d.alert_id, d.node])).toEqual([
          ['shared-b', 'node-b'],
          ['shared-a', 'node-a'],
        ]);
      }
      expect((await b.list(query({ 'filter[node]': 'node-b' }))).count).toBe(1);
      await a.close();
      await b.close();
    } finally {
      await other.close();
    }
  });

  it('keeps the newest log_size attempts: older rows are deleted after every log_size / 10 written', async () => {
    await repo.keepNewest(0);
    expect((await repo.list(query())).count).toBe(0);
    const log = logOf(database, 'node-a', 10);
    expect(log.purgeEvery).toBe(1);
    for (let n = 1; n <= 35; n += 1) {
      log.add(attempt(100 + n));
      await log.flush();
      // The purge runs in the background; it is the only one at a time, so waiting for it is one call.
      await log.purge();
      expect((await repo.list(query())).count).toBeLessThanOrEqual(10);
    }
    const left = await repo.list(query());
    expect(left.data.map((d) => d.alert_id)).toEqual(
      Array.from({ length: 10 }, (_, i) => `alert-${135 - i}`),
    );
    expect(await repo.keepNewest(10)).toBe(0);
    expect(await repo.keepNewest(3)).toBe(7);
    await log.close();
  });

  it('a dead database never throws at the caller: attempts wait, reads fail with 503', async () => {
    const dead = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
    await dead.close();
    const warnings: string[] = [];
    const log = new DeliveryLog({
      repository: new SqlAlertDeliveryRepository(dead),
      node: 'node-dead',
      size: 10,
      timers: realTimers,
      logger: { warn: (_obj, msg) => warnings.push(msg) },
      flushDelayMs: 1,
      retryDelayMs: 60_000,
    });
    expect(() => log.add(attempt(200))).not.toThrow();
    await log.flush();
    expect(log.queued).toBe(1);
    expect(warnings).toHaveLength(1);
    const read = await log.list(query()).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(read).toBeInstanceOf(AppError);
    expect((read as AppError).kind).toBe('unavailable');
    await log.close(100);
    expect((await repo.list(query({ 'filter[node]': 'node-dead' }))).count).toBe(0);
  });
});
