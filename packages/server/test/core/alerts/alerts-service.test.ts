import { expect, test } from 'vitest';
import { AlertDispatcher } from '../../../src/core/alerts/alert-dispatcher.js';
import type { AlertRule } from '../../../src/core/alerts/alert.js';
import { AlertsService } from '../../../src/core/alerts/alerts-service.js';
import { MemoryRecorder } from './memory-recorder.js';
import { ManualTimers, settle } from './manual-timers.js';

const hook = { url: 'http://127.0.0.1:9/hook', secret: 'secret-secret-secret' };

function setup(rules: AlertRule[]) {
  const timers = new ManualTimers();
  const bodies: Record<string, unknown>[] = [];
  const log = new MemoryRecorder();
  const clients = new Map([
    ['web-1', { name: 'web one', tags: ['web'], connected: true }],
    ['db-1', { name: 'db one', tags: ['db'], connected: true }],
    ['grouped', { name: 'in a group', tags: [], connected: true }],
  ]);
  const dispatcher = new AlertDispatcher({
    webhook: {
      post: (_url, body) => {
        bodies.push(JSON.parse(body) as Record<string, unknown>);
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
  const service = new AlertsService({
    rules,
    dispatcher,
    log,
    clients: {
      get: (id) => clients.get(id),
      membersOf: (groups) => Promise.resolve(groups.includes('g1') ? ['grouped'] : []),
    },
    clock: timers.clock,
    timers,
    logger: { warn: () => undefined },
  });
  /** The client's connection ends (record first, then the event, as the directory does). */
  const detach = async (id: string) => {
    (clients.get(id) as { connected: boolean }).connected = false;
    service.clientDetached(id);
    await settle();
  };
  const attach = (id: string) => {
    (clients.get(id) as { connected: boolean }).connected = true;
    service.clientAttached(id);
  };
  return { service, timers, bodies, detach, attach, log };
}

test('client_offline fires once the client stayed offline for `after`, not before', async () => {
  const { timers, bodies, detach } = setup([
    { name: 'offline', event: 'client_offline', afterMs: 300_000, webhook: hook },
  ]);
  await detach('web-1');
  timers.advance(299_999);
  await settle();
  expect(bodies).toEqual([]);
  timers.advance(1);
  await settle();
  expect(bodies).toMatchObject([
    {
      rule: 'offline',
      event: 'client_offline',
      client_id: 'web-1',
      client_name: 'web one',
      offline_since: '2026-01-01T00:00:00.000Z',
      offline_for_sec: 300,
    },
  ]);
});

test('a client back before `after` raises nothing, and a later disconnection starts a new wait', async () => {
  const { timers, bodies, detach, attach } = setup([
    { name: 'offline', event: 'client_offline', afterMs: 60_000, webhook: hook },
  ]);
  await detach('web-1');
  timers.advance(59_000);
  attach('web-1');
  timers.advance(120_000);
  await settle();
  expect(bodies).toEqual([]);
  await detach('web-1');
  timers.advance(60_000);
  await settle();
  expect(bodies).toHaveLength(1);
});

test('the client filter matches by id, tag or group; other clients raise nothing', async () => {
  const { timers, bodies, detach } = setup([
    { name: 'by-id', event: 'client_offline', afterMs: 1000, client_ids: ['db-1'], webhook: hook },
    { name: 'by-tag', event: 'client_offline', afterMs: 1000, tags: ['web'], webhook: hook },
    { name: 'by-group', event: 'client_offline', afterMs: 1000, group_ids: ['g1'], webhook: hook },
  ]);
  await detach('web-1');
  await detach('db-1');
  await detach('grouped');
  timers.advance(1000);
  await settle();
  expect(bodies.map((b) => `${String(b.rule)}:${String(b.client_id)}`).sort()).toEqual([
    'by-group:grouped',
    'by-id:db-1',
    'by-tag:web-1',
  ]);
});

test('run_failed and schedule_failed go to the rules of that event only', async () => {
  const { service, bodies } = setup([
    { name: 'runs', event: 'run_failed', webhook: hook },
    { name: 'schedules', event: 'schedule_failed', webhook: hook },
  ]);
  service.runFailed({ jid: 'j1', schedule_id: null, status: 'failed', counts: { failed: 2 } });
  service.scheduleFailed({
    schedule_id: 's1',
    scheduled_at: '2026-01-01T00:00:00.000Z',
    reason: 'no targets',
  });
  await settle();
  expect(bodies.map((b) => [b.rule, b.event])).toEqual([
    ['runs', 'run_failed'],
    ['schedules', 'schedule_failed'],
  ]);
});

test('the rules and the delivery log are for administrators; rules never show the secret', () => {
  const { service } = setup([
    { name: 'runs', event: 'run_failed', webhook: hook, email: ['ops@example.com'] },
  ]);
  const admin = { groups: ['Administrators'] };
  expect(JSON.stringify(service.rules(admin))).not.toContain(hook.secret);
  expect(service.rules(admin)).toEqual([
    {
      name: 'runs',
      event: 'run_failed',
      after_sec: null,
      client_ids: [],
      tags: [],
      group_ids: [],
      webhook_url: 'http://127.0.0.1:9/hook',
      email: ['ops@example.com'],
    },
  ]);
  expect(() => service.rules({ groups: ['Operators'] })).toThrow(/Administrators|forbidden|admin/i);
});
