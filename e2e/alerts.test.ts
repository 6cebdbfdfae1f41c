/**
 * Alerts with real processes: a real svcd with [[alerts.rules]], real svc agents, a real local HTTP webhook
 * receiver and the real local SMTP listener of the two-factor tests. An agent killed with SIGKILL raises a signed
 * client_offline webhook (retried after the receiver first answers 500) and an e-mail; a real failing run raises
 * run_failed; the delivery log is for administrators only.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hash } from '@node-rs/bcrypt';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { verifyAlert } from '../packages/server/src/core/alerts/signature.js';
import { startSvcdProcess, svcdFingerprint, writeSvcdConfig } from '../test-support/e2e-setup.js';
import { createApiClient, type ApiClient } from '../test-support/api-client.js';
import { startSmtpReceiver } from '../test-support/code-receivers.js';
import { freePort, type RunningProcess } from '../test-support/process.js';
import { startWebhookReceiver, type ReceivedWebhook } from '../test-support/webhook-receiver.js';
import { SHELL_FRIENDLY_FILTERS, startE2eAgent } from '../test-support/e2e-agent.js';

const ADMIN = { basic: ['admin', 'admin-secret-1'] as [string, string] };
const OPERATOR = { basic: ['operator', 'operator-secret-1'] as [string, string] };
const OFFLINE_SECRET = 'offline-webhook-secret-1';
const RUNS_SECRET = 'runs-webhook-secret-0001';

let dir: string;
let api: ApiClient;
let svcd: RunningProcess | undefined;
let clientUrl: string;
let fingerprint: string;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
let smtp: Awaited<ReturnType<typeof startSmtpReceiver>>;
const agents = new Map<string, RunningProcess>();

async function startAgent(id: string): Promise<RunningProcess> {
  const agent = await startE2eAgent({
    dir,
    server: clientUrl,
    fingerprint,
    id,
    lines: SHELL_FRIENDLY_FILTERS,
  });
  agents.set(id, agent);
  return agent;
}

/** The body as JSON, after checking its signature with the rule's secret. */
function verified(webhook: ReceivedWebhook, secret: string): Record<string, unknown> {
  const timestamp = Number(webhook.headers['x-svc-timestamp']);
  expect(Math.abs(timestamp - Date.now() / 1000)).toBeLessThan(60);
  expect(verifyAlert(secret, timestamp, webhook.body, webhook.headers['x-svc-signature'] ?? '')).toBe(true);
  expect(webhook.headers['content-type']).toBe('application/json');
  return JSON.parse(webhook.body) as Record<string, unknown>;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-alerts-'));
  receiver = await startWebhookReceiver({ '/offline': [500] });
  smtp = await startSmtpReceiver();
  const [apiPort, clientPort] = [await freePort(), await freePort()];
  await writeFile(
    join(dir, 'users.json'),
    JSON.stringify([
      { username: 'admin', password: await hash('admin-secret-1', { cost: 4 }), groups: ['Administrators'] },
      { username: 'operator', password: await hash('operator-secret-1', { cost: 4 }), groups: ['Operators'] },
    ]),
  );
  const configPath = await writeSvcdConfig(dir, {
    clientPort,
    apiPort,
    keySeed: 'e2e-alerts-seed',
    server: ['auth = "agent:agent-password-1"'],
  });
  await writeFile(
    configPath,
    [
      '',
      '[smtp]',
      `server = "${smtp.address}"`,
      'sender_email = "svcd@example.com"',
      '[alerts]',
      'retry_base = "300ms"',
      '[[alerts.rules]]',
      'name = "victim-offline"',
      'event = "client_offline"',
      'after = "1s"',
      'client_ids = ["victim"]',
      `webhook = { url = "${receiver.url('/offline')}", secret = "${OFFLINE_SECRET}" }`,
      'email = ["ops@example.com"]',
      '[[alerts.rules]]',
      'name = "failed-runs"',
      'event = "run_failed"',
      `webhook = { url = "${receiver.url('/runs')}", secret = "${RUNS_SECRET}" }`,
    ].join('\n'),
    { flag: 'a' },
  );
  svcd = await startSvcdProcess(configPath);
  api = createApiClient(`http://127.0.0.1:${apiPort}/api/v1`);
  fingerprint = await svcdFingerprint(api);
  clientUrl = `http://127.0.0.1:${clientPort}`;
  await startAgent('victim');
  await startAgent('worker');
}, 90_000);

afterAll(async () => {
  for (const agent of agents.values()) await agent.stop();
  await svcd?.stop();
  await receiver?.close();
  await smtp?.close();
  await rm(dir, { recursive: true, force: true });
});

test('an agent killed with SIGKILL: a signed client_offline webhook, retried after a 500, and an e-mail', async () => {
  const victim = agents.get('victim') as RunningProcess;
  const killedAt = Date.now();
  victim.child.kill('SIGKILL');
  await victim.exited;

  const first = await receiver.next((r) => r.path === '/offline');
  expect(first.status).toBe(500);
  // Not before the rule's `after` of 1 s.
  expect(first.at - killedAt).toBeGreaterThanOrEqual(1000);
  const body = verified(first, OFFLINE_SECRET);
  expect(body).toMatchObject({ rule: 'victim-offline', event: 'client_offline', client_id: 'victim' });
  expect(body.offline_for_sec).toBeGreaterThanOrEqual(1);
  expect(first.headers['x-svc-delivery']).toBe(`${String(body.id)}/1`);

  const retry = await receiver.next((r) => r.path === '/offline' && r !== first);
  expect(retry.status).toBe(200);
  expect(retry.at - first.at).toBeGreaterThanOrEqual(300);
  expect(verified(retry, OFFLINE_SECRET)).toMatchObject({ id: body.id, client_id: 'victim' });
  expect(retry.headers['x-svc-delivery']).toBe(`${String(body.id)}/2`);

  const mail = await smtp.inbox.next(20_000);
  expect(mail.to).toEqual(['ops@example.com']);
  expect(mail.from).toBe('svcd@example.com');
  expect(mail.raw).toMatch(/Subject: svc alert victim-offline: client victim \(.*\) offline for \d+ s/);
  expect(mail.raw).toContain('"client_id": "victim"');
  // Only the one alert: the worker, not in the rule's client_ids, is still connected anyway.
  expect(receiver.received.filter((r) => r.path === '/offline')).toHaveLength(2);
}, 60_000);

test('a real run that fails raises run_failed; a successful one does not', async () => {
  const ok = await api.post('/commands', { command: 'true', client_ids: ['worker'] }, { auth: ADMIN });
  expect(ok.status, ok.text).toBe(200);
  const failing = await api.post('/commands', { command: 'exit 3', client_ids: ['worker'] }, { auth: ADMIN });
  expect(failing.status, failing.text).toBe(200);
  const jid = failing.json.data.jid as string;
  const webhook = await receiver.next((r) => r.path === '/runs');
  const body = verified(webhook, RUNS_SECRET);
  expect(body).toMatchObject({ rule: 'failed-runs', event: 'run_failed', jid, status: 'failed' });
  expect((body.counts as Record<string, number>).failed).toBe(1);
  expect(receiver.received.filter((r) => r.path === '/runs')).toHaveLength(1);
}, 60_000);

test('GET /alerts/deliveries: every attempt for administrators, 401 without credentials, 403 for others', async () => {
  const res = await api.get('/alerts/deliveries?filter[rule]=victim-offline&sort=id', { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  const webhook = (res.json.data as Record<string, unknown>[]).filter((d) => d.channel === 'webhook');
  expect(webhook.map((d) => [d.attempt, d.outcome, d.http_status])).toEqual([
    [1, 'retrying', 500],
    [2, 'delivered', 200],
  ]);
  expect(webhook[0]?.target).toBe(receiver.url('/offline'));
  expect(webhook[0]?.error).toBe('the receiver answered HTTP 500');
  expect(res.text).not.toContain(OFFLINE_SECRET);

  const rules = await api.get('/alerts/rules', { auth: ADMIN });
  expect(rules.status, rules.text).toBe(200);
  expect(rules.json.data).toHaveLength(2);
  expect(rules.text).not.toContain(OFFLINE_SECRET);
  expect(rules.text).not.toContain(RUNS_SECRET);

  for (const path of ['/alerts/deliveries', '/alerts/rules']) {
    expect((await api.get(path)).status).toBe(401);
    expect((await api.get(path, { auth: OPERATOR })).status).toBe(403);
  }
  const bad = await api.get('/alerts/deliveries?sort=secret', { auth: ADMIN });
  expect(bad.status).toBe(400);
  expect(bad.json.errors[0].detail ?? bad.json.errors[0].title).toMatch(/sort/);
}, 30_000);
