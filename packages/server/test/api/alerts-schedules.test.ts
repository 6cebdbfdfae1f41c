import { afterAll, beforeAll, expect, test } from 'vitest';
import { verifyAlert } from '../../src/core/alerts/signature.js';
import { OPERATOR, startTestServer, type TestServer } from '../../../../test-support/server.js';
import { startWebhookReceiver } from '../../../../test-support/webhook-receiver.js';

const asOperator = { auth: { basic: [OPERATOR.username, OPERATOR.password] as [string, string] } };
const SECRET = 'schedule-alert-secret-01';
/** The clock schedules are created and fired by. */
const clock = { at: Date.parse('2030-03-04T10:00:30Z'), now: () => new Date(clock.at) };

let t: TestServer;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  t = await startTestServer({
    store: 'database:sqlite',
    api: { metrics_address: '127.0.0.1:0' },
    sections: {
      schedules: { catch_up_delay: 0 },
      alerts: {
        rules: [
          {
            name: 'schedules',
            event: 'schedule_failed',
            webhook: { url: receiver.url('/hook'), secret: SECRET },
          },
        ],
      },
    },
    tuning: { scheduleClock: clock },
  });
});
afterAll(async () => {
  await t?.stop();
  await receiver?.close();
});

test('a schedule firing recorded as failed raises a signed schedule_failed webhook with the reason', async () => {
  const created = await t.api.post(
    '/schedules',
    {
      name: 'nobody',
      schedule: '* * * * *',
      type: 'command',
      command: 'id',
      tags: { tags: ['no-such-tag'] },
    },
    asOperator,
  );
  expect(created.status, created.text).toBe(201);
  const { id, next_run_at } = created.json.data as { id: string; next_run_at: string };
  clock.at = Date.parse(next_run_at) + 150;
  expect(await t.server.tickSchedules()).toBe(1);

  const webhook = await receiver.next((r) => r.path === '/hook');
  const timestamp = Number(webhook.headers['x-svc-timestamp']);
  expect(verifyAlert(SECRET, timestamp, webhook.body, webhook.headers['x-svc-signature'] ?? '')).toBe(true);
  const body = JSON.parse(webhook.body) as Record<string, unknown>;
  expect(body).toMatchObject({
    rule: 'schedules',
    event: 'schedule_failed',
    schedule_id: id,
    scheduled_at: next_run_at,
  });
  expect(body.reason).toMatch(/No client matches the tags/);

  // The attempt is counted once it is recorded, right after the receiver answered.
  const delivered = async () => {
    const metrics = await (await fetch(t.server.metricsUrl ?? '')).text();
    return /^svcd_alert_deliveries_total\{outcome="delivered"\} 1$/m.test(metrics);
  };
  for (let i = 0; i < 50 && !(await delivered()); i += 1) await new Promise((r) => setTimeout(r, 20));
  expect(await delivered()).toBe(true);
});
