import { expect, test } from 'vitest';
import { AlertDispatcher } from '../../../src/core/alerts/alert-dispatcher.js';
import type { Alert, AlertRule } from '../../../src/core/alerts/alert.js';
import { MemoryRecorder } from './memory-recorder.js';
import { verifyAlert } from '../../../src/core/alerts/signature.js';
import { ManualTimers, settle } from './manual-timers.js';

const SECRET = 'webhook-secret-0123456789';
const RULE: AlertRule = {
  name: 'runs',
  event: 'run_failed',
  webhook: { url: 'https://user:pw@hooks.example.com/alerts?token=abc', secret: SECRET },
};
const alert = (id = 'a1'): Alert => ({
  id,
  rule: 'runs',
  at: '2026-01-01T00:00:00.000Z',
  body: { event: 'run_failed', jid: 'j1', schedule_id: null, status: 'failed', counts: { failed: 1 } },
});

/** A webhook receiver answering the scripted statuses in turn (an Error = no answer), keeping each request. */
function scripted(answers: (number | Error)[]) {
  const requests: { url: string; body: string; headers: Record<string, string> }[] = [];
  return {
    requests,
    post(url: string, body: string, headers: Record<string, string>) {
      requests.push({ url, body, headers });
      const answer = answers.shift() ?? 200;
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    },
  };
}

function dispatcher(
  poster: ReturnType<typeof scripted>,
  options: { queueSize?: number; maxAttempts?: number } = {},
) {
  const timers = new ManualTimers();
  const log = new MemoryRecorder();
  const warnings: string[] = [];
  const d = new AlertDispatcher({
    webhook: poster,
    log,
    clock: timers.clock,
    timers,
    logger: { warn: (_obj, msg) => warnings.push(msg) },
    maxAttempts: options.maxAttempts ?? 5,
    retryBaseMs: 1000,
    queueSize: options.queueSize ?? 100,
  });
  return { d, timers, log, warnings };
}

test('a webhook is a signed JSON POST; the signature covers the timestamp header and the body', async () => {
  const poster = scripted([200]);
  const { d, log } = dispatcher(poster);
  d.enqueue(alert(), RULE);
  await settle();
  const [request] = poster.requests;
  expect(request?.headers['content-type']).toBe('application/json');
  const timestamp = Number(request?.headers['x-svc-timestamp']);
  expect(timestamp).toBe(Date.parse('2026-01-01T00:00:00Z') / 1000);
  expect(verifyAlert(SECRET, timestamp, request?.body ?? '', request?.headers['x-svc-signature'] ?? '')).toBe(
    true,
  );
  expect(JSON.parse(request?.body ?? '')).toMatchObject({
    id: 'a1',
    rule: 'runs',
    event: 'run_failed',
    jid: 'j1',
  });
  expect(log.all()).toMatchObject([{ outcome: 'delivered', http_status: 200, attempt: 1, error: '' }]);
});

test('failed attempts are retried after 1 s, 2 s, 4 s, 8 s, then given up; each attempt is logged', async () => {
  const poster = scripted([500, new Error('connection refused'), 503, 500, 500]);
  const { d, timers, log, warnings } = dispatcher(poster);
  d.enqueue(alert(), RULE);
  const waits: number[] = [];
  for (let attempt = 1; attempt < 5; attempt += 1) {
    await settle();
    expect(poster.requests).toHaveLength(attempt);
    waits.push(...timers.delays());
    // Not a millisecond early.
    timers.advance((timers.delays()[0] ?? 0) - 1);
    await settle();
    expect(poster.requests).toHaveLength(attempt);
    timers.advance(1);
  }
  await settle();
  expect(waits).toEqual([1000, 2000, 4000, 8000]);
  expect(poster.requests).toHaveLength(5);
  expect(timers.delays()).toEqual([]);
  expect(log.all().map((e) => [e.attempt, e.outcome, e.http_status])).toEqual([
    [1, 'retrying', 500],
    [2, 'retrying', null],
    [3, 'retrying', 503],
    [4, 'retrying', 500],
    [5, 'given_up', 500],
  ]);
  expect(log.all()[1]?.error).toBe('connection refused');
  expect(warnings).toEqual(['alert not delivered; gave up']);
  expect(d.counts).toEqual({ delivered: 0, retrying: 4, given_up: 1, dropped: 0 });
});

test('a retry that succeeds is logged delivered', async () => {
  const poster = scripted([500, 200]);
  const { d, timers, log } = dispatcher(poster);
  d.enqueue(alert(), RULE);
  await settle();
  timers.advance(1000);
  await settle();
  expect(log.all().map((e) => e.outcome)).toEqual(['retrying', 'delivered']);
  expect(poster.requests[1]?.headers['x-svc-delivery']).toBe('a1/2');
});

test('the log shows the URL without user info or query, and never the secret', async () => {
  const poster = scripted([200]);
  const { d, log } = dispatcher(poster);
  d.enqueue(alert(), RULE);
  await settle();
  expect(log.all()[0]?.target).toBe('https://hooks.example.com/alerts');
  expect(JSON.stringify(log.all())).not.toContain(SECRET);
  expect(JSON.stringify(log.all())).not.toContain('token=abc');
});

test('beyond the queue size alerts are dropped, logged and counted, and enqueue never waits', async () => {
  let release: (status: number) => void = () => undefined;
  const blocked = new Promise<number>((resolve) => (release = resolve));
  const poster = { requests: [] as unknown[], post: () => blocked };
  const { d, log, warnings } = dispatcher(poster as unknown as ReturnType<typeof scripted>, { queueSize: 3 });
  for (let i = 0; i < 10; i += 1) d.enqueue(alert(`a${i}`), RULE);
  expect(d.pending).toBe(3);
  expect(log.all().filter((e) => e.outcome === 'dropped')).toHaveLength(7);
  expect(warnings.filter((w) => w.includes('queue is full'))).toHaveLength(7);
  release(200);
  await settle();
  await settle();
  expect(d.counts.delivered).toBe(3);
  expect(d.pending).toBe(0);
});

test('an e-mail rule without an SMTP sender fails its attempts with a clear error', async () => {
  const poster = scripted([]);
  const { d, log } = dispatcher(poster, { maxAttempts: 1 });
  d.enqueue(alert(), { name: 'mail', event: 'run_failed', email: ['ops@example.com'] });
  await settle();
  expect(log.all()).toMatchObject([
    {
      channel: 'email',
      target: 'ops@example.com',
      outcome: 'given_up',
      error: 'no [smtp] server is configured',
    },
  ]);
});
