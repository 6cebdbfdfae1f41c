import { afterAll, beforeAll, expect, test } from 'vitest';
import { verifyAlert } from '../../src/core/alerts/signature.js';
import { startWebhookReceiver } from '../../../../test-support/webhook-receiver.js';
import { waitFor } from '../gateway/helpers.js';
import {
  fireFailingSchedule,
  startScheduleAlertServer,
  type ScheduleAlertServer,
} from './schedule-alert-server.js';

const SECRET = 'schedule-alert-secret-01';

let server: ScheduleAlertServer;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  server = await startScheduleAlertServer(
    { url: receiver.url('/hook'), secret: SECRET },
    { api: { metrics_address: '127.0.0.1:0' } },
  );
});
afterAll(async () => {
  await server?.t.stop();
  await receiver?.close();
});

test('a schedule firing recorded as failed raises a signed schedule_failed webhook with the reason', async () => {
  const { t } = server;
  const { id, next_run_at } = await fireFailingSchedule(server);

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
  await waitFor(delivered, 5_000, 'the delivery counted in the metrics');
});
