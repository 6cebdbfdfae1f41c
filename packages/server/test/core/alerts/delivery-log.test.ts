import type { AlertDelivery, ListQuery } from '@svc/protocol';
import { expect, test } from 'vitest';
import { AlertDispatcher } from '../../../src/core/alerts/alert-dispatcher.js';
import type { AlertRule } from '../../../src/core/alerts/alert.js';
import { DeliveryLog } from '../../../src/core/alerts/delivery-log.js';
import type { AlertDeliveryRepository, NewAlertDelivery } from '../../../src/core/alerts/ports.js';
import { ManualTimers, settle } from './manual-timers.js';

type Stored = Omit<AlertDelivery, 'id'>;

/** A repository whose writes fail, hang or succeed as the test says. */
function scriptedRepository() {
  const rows: Stored[] = [];
  const calls = { append: 0, keepNewest: [] as number[] };
  let mode: 'ok' | 'fail' | 'hang' = 'ok';
  const repository: AlertDeliveryRepository = {
    append(entries) {
      calls.append += 1;
      if (mode === 'fail') return Promise.reject(new Error('connection refused'));
      if (mode === 'hang') return new Promise<void>(() => undefined);
      rows.push(...entries);
      return Promise.resolve();
    },
    list: (_query: ListQuery) =>
      Promise.resolve({ data: rows.map((r, i) => ({ id: i + 1, ...r })), count: rows.length }),
    keepNewest(keep) {
      calls.keepNewest.push(keep);
      const gone = Math.max(0, rows.length - keep);
      rows.splice(0, gone);
      return Promise.resolve(gone);
    },
  };
  return { repository, rows, calls, set: (m: typeof mode) => (mode = m) };
}

const attempt = (n: number): NewAlertDelivery => ({
  alert_id: `a${n}`,
  rule: 'runs',
  event: 'run_failed',
  channel: 'webhook',
  target: 'https://hooks.example.com/alerts',
  attempt: 1,
  at: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(),
  outcome: 'delivered',
  http_status: 204,
  error: '',
});

function setup(size = 10, maxQueued?: number) {
  const timers = new ManualTimers();
  const repo = scriptedRepository();
  const warnings: string[] = [];
  const log = new DeliveryLog({
    repository: repo.repository,
    node: 'node-a',
    size,
    timers,
    logger: { warn: (_obj, msg) => warnings.push(msg) },
    flushDelayMs: 50,
    retryDelayMs: 5000,
    ...(maxQueued === undefined ? {} : { maxQueued }),
  });
  return { timers, repo, warnings, log };
}

test('attempts are queued and written together after the flush delay, with the node', async () => {
  const { timers, repo, log } = setup();
  log.add(attempt(1));
  log.add(attempt(2));
  expect(repo.calls.append).toBe(0);
  timers.advance(50);
  await settle();
  expect(repo.calls.append).toBe(1);
  expect(repo.rows.map((r) => [r.alert_id, r.node])).toEqual([
    ['a1', 'node-a'],
    ['a2', 'node-a'],
  ]);
  // A read writes what waits first, so this node's latest attempts are listed.
  log.add(attempt(3));
  const listed = await log.list({ sort: [], filters: [] });
  expect(listed.count).toBe(3);
});

test('a database that refuses writes: the attempts wait in memory, one warning, written when it is back', async () => {
  const { timers, repo, warnings, log } = setup(10, 4);
  repo.set('fail');
  for (let n = 1; n <= 3; n += 1) log.add(attempt(n));
  timers.advance(50);
  await settle();
  expect([log.queued, repo.rows.length]).toEqual([3, 0]);
  log.add(attempt(4));
  log.add(attempt(5));
  log.add(attempt(6));
  // The oldest go first beyond maxQueued.
  expect([log.queued, log.dropped]).toEqual([4, 2]);
  timers.advance(5000);
  await settle();
  expect(warnings).toEqual([
    'alert delivery log: could not write to the database; the attempts wait in memory and are written later',
    'alert delivery log: the database does not take the attempts; the oldest waiting ones are dropped',
  ]);
  repo.set('ok');
  timers.advance(5000);
  await settle();
  expect(repo.rows.map((r) => r.alert_id)).toEqual(['a3', 'a4', 'a5', 'a6']);
  expect(log.queued).toBe(0);
});

test('deliveries go on while the database hangs: the dispatcher never waits for the log', async () => {
  const { timers, repo, log } = setup(100);
  repo.set('hang');
  const posted: string[] = [];
  const dispatcher = new AlertDispatcher({
    webhook: {
      post: (_url, body) => {
        posted.push((JSON.parse(body) as { id: string }).id);
        return Promise.resolve(204);
      },
    },
    log,
    clock: timers.clock,
    timers,
    logger: { warn: () => undefined },
    maxAttempts: 1,
    retryBaseMs: 1000,
    queueSize: 100,
  });
  const rule: AlertRule = {
    name: 'runs',
    event: 'run_failed',
    webhook: { url: 'https://hooks.example.com/alerts', secret: 'webhook-secret-0123456789' },
  };
  const raise = (id: string) =>
    dispatcher.enqueue(
      {
        id,
        rule: 'runs',
        at: '2026-01-01T00:00:00.000Z',
        body: { event: 'run_failed', jid: id, schedule_id: null, status: 'failed', counts: { failed: 1 } },
      },
      rule,
    );
  raise('first');
  await settle();
  timers.advance(50);
  await settle();
  // The first write hangs; later alerts are delivered all the same and their attempts wait.
  raise('second');
  raise('third');
  await settle();
  expect(posted).toEqual(['first', 'second', 'third']);
  expect(dispatcher.pending).toBe(0);
  expect(log.queued).toBe(2);
  expect(repo.calls.append).toBe(1);
  // close() does not wait longer than it is told for a database that does not answer.
  const closed = log.close(1000);
  timers.advance(1000);
  await closed;
});

test('after every size / 10 attempts written, the rows beyond the newest size are deleted', async () => {
  const { timers, repo, log } = setup(20);
  expect(log.purgeEvery).toBe(2);
  for (let n = 1; n <= 25; n += 1) {
    log.add(attempt(n));
    timers.advance(50);
    await settle();
    expect(repo.rows.length).toBeLessThan(20 + log.purgeEvery);
  }
  expect(repo.calls.keepNewest).toEqual(Array.from({ length: 12 }, () => 20));
  await log.purge();
  expect(repo.rows.map((r) => r.alert_id)).toEqual(Array.from({ length: 20 }, (_, i) => `a${i + 6}`));
});
