/**
 * The alert delivery log through svcd: every attempt is stored in the database (a failed one and its retry),
 * listed with the list grammar to administrators only, and still there after a restart.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { ADMIN } from '../../../../test-support/server.js';
import { startWebhookReceiver } from '../../../../test-support/webhook-receiver.js';
import { waitFor } from '../gateway/helpers.js';
import {
  asOperator,
  fireFailingSchedule,
  startScheduleAlertServer,
  type ScheduleAlertServer,
} from './schedule-alert-server.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary JSON
type Json = any;

const asAdmin = { auth: { basic: [ADMIN.username, ADMIN.password] as [string, string] } };
const SECRET = 'delivery-log-secret-01';

let server: ScheduleAlertServer;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

beforeAll(async () => {
  // The first attempt is answered 500, the retry 200.
  receiver = await startWebhookReceiver({ '/hook?token=in-the-query': [500] });
  server = await startScheduleAlertServer(
    { url: `${receiver.url('/hook')}?token=in-the-query`, secret: SECRET },
    { alerts: { retry_base: '10ms', log_size: 10 } },
  );
});
afterAll(async () => {
  await server?.t.stop();
  await receiver?.close();
});

const deliveries = async (query = ''): Promise<Json> => {
  const res = await server.t.api.get(`/alerts/deliveries${query}`, asAdmin);
  expect(res.status, res.text).toBe(200);
  return res.json;
};

test('each attempt is stored, listed newest first with paging, and survives a restart', async () => {
  const { t } = server;
  await fireFailingSchedule(server);
  await receiver.next((r) => r.path.startsWith('/hook') && r.status === 200);

  const both = await waitFor(
    async (): Promise<Json> => {
      const listed: Json = await deliveries();
      return listed.meta.count === 2 && listed;
    },
    15_000,
    'two attempts in the delivery log',
  );
  const [delivered, retrying] = both.data as Json[];
  expect(retrying).toMatchObject({
    rule: 'schedules',
    event: 'schedule_failed',
    channel: 'webhook',
    target: receiver.url('/hook'),
    attempt: 1,
    outcome: 'retrying',
    http_status: 500,
    error: 'the receiver answered HTTP 500',
  });
  expect(delivered).toMatchObject({
    alert_id: retrying.alert_id,
    attempt: 2,
    outcome: 'delivered',
    error: '',
  });
  expect(typeof delivered.node).toBe('string');
  expect(delivered.id).toBeGreaterThan(retrying.id);
  expect(JSON.stringify(both)).not.toContain(SECRET);
  expect(JSON.stringify(both)).not.toContain('in-the-query');

  const page = await deliveries('?page[limit]=1&page[offset]=1&fields[deliveries]=id,outcome');
  expect(page).toEqual({ data: [{ id: retrying.id, outcome: 'retrying' }], meta: { count: 2 } });
  const filtered = await deliveries('?filter[outcome]=delivered&sort=attempt');
  expect(filtered.data.map((d: Json): number => d.id as number)).toEqual([delivered.id]);

  const refused = await t.api.get('/alerts/deliveries', asOperator);
  expect(refused.status).toBe(403);
  const bad = await t.api.get('/alerts/deliveries?sort=secret', asAdmin);
  expect(bad.status).toBe(400);

  await t.restart();
  const after = await deliveries();
  expect(after).toEqual(both);
});
