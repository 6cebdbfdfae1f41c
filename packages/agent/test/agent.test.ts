import { createServer, type AddressInfo } from 'node:net';
import { expect, test, vi } from 'vitest';
import { Backoff } from '@svc/platform';
import { Agent, type AgentOptions } from '../src/connection/agent.js';
import { defaultExecSettings } from '../src/exec/exec-settings.js';
import { NO_JOBS_DATA_DIR } from './support/exec.js';
import { LinkError } from '../src/connection/link-error.js';
import type { LinkOptions } from '../src/connection/ssh-link.js';
import { captureLogs } from './support/log-capture.js';

const options = (serverUrl: string): AgentOptions => ({
  serverUrl,
  credentials: { id: 'client1', password: 'pass-1234' },
  clientId: 'c1',
  name: 'host',
  tags: [],
  labels: {},
  fingerprint: undefined,
  tunnelAllowed: [],
  keepaliveIntervalMs: 20_000,
  maxRetryIntervalMs: 60_000,
  dataDir: NO_JOBS_DATA_DIR,
  exec: defaultExecSettings(),
});

/** A backoff whose sleeps are recorded and return at once; `target.agent` is stopped after `stopAfter` sleeps. */
function recordingBackoff(stopAfter: number) {
  const sleeps: number[] = [];
  const target: { agent?: Agent } = {};
  const backoff = new Backoff({
    baseMs: 1000,
    maxMs: 60_000,
    random: () => 0.5,
    sleep: (ms) => {
      sleeps.push(ms);
      if (sleeps.length >= stopAfter) void target.agent?.stop();
      return Promise.resolve();
    },
  });
  return { backoff, sleeps, target };
}

test('an unreachable server is retried with growing delays and a log line each attempt', async () => {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));

  const { logger, lines } = captureLogs();
  const { backoff, sleeps, target } = recordingBackoff(4);
  const agent = (target.agent = new Agent(options(`ws://127.0.0.1:${port}/`), { logger, backoff }));
  await agent.run();

  expect(sleeps).toEqual([500, 1000, 2000, 4000]);
  const failures = lines.filter((line) => line.msg.startsWith('cannot connect to svcd'));
  expect(failures).toHaveLength(4);
  expect(failures[0]?.msg).toMatch(/ECONNREFUSED.*; retrying in 500ms$/);
  expect(failures[3]?.msg).toMatch(/retrying in 4s$/);
  expect(failures[0]).toMatchObject({ level: 40, retry_in_ms: 500, server: `ws://127.0.0.1:${port}/` });
});

test('a fingerprint mismatch is logged as an error and retried only after the longest delay', async () => {
  const { logger, lines } = captureLogs();
  const { backoff, sleeps, target } = recordingBackoff(2);
  const openLink = vi.fn((_: LinkOptions) =>
    Promise.reject(
      new LinkError('fingerprint', "svcd's host key fingerprint is aa:bb but the configured one is cc"),
    ),
  );
  const agent = (target.agent = new Agent(
    { ...options('ws://x:1/'), fingerprint: 'cc' },
    { logger, backoff, openLink },
  ));
  await agent.run();
  expect(sleeps).toEqual([60_000, 60_000]);
  expect(openLink.mock.calls[0]?.[0]).toMatchObject({ url: 'ws://x:1/', fingerprint: 'cc' });
  const errors = lines.filter((line) => line.level === 50);
  expect(errors).toHaveLength(2);
  expect(errors[0]?.msg).toMatch(/fingerprint is aa:bb .*; retrying in 1m$/);
});

test('refused credentials are an error line and use the normal backoff', async () => {
  const { logger, lines } = captureLogs();
  const { backoff, sleeps, target } = recordingBackoff(2);
  const openLink = () => Promise.reject(new LinkError('auth', 'svcd refused the credentials'));
  const agent = (target.agent = new Agent(options('ws://x:1/'), { logger, backoff, openLink }));
  await agent.run();
  expect(sleeps).toEqual([500, 1000]);
  expect(lines.filter((line) => line.level === 50).map((line) => line.msg)).toEqual([
    'svcd refused the credentials; retrying in 500ms',
    'svcd refused the credentials; retrying in 1s',
  ]);
});

test('a busy svcd (503 with Retry-After) is tried again when it said, and the backoff does not grow', async () => {
  const { logger, lines } = captureLogs();
  const { backoff, sleeps, target } = recordingBackoff(4);
  const told = [12_000, 3_000, undefined, undefined];
  const openLink = () => {
    const retryAfterMs = told.shift();
    return Promise.reject(new LinkError('unreachable', 'svcd is busy', retryAfterMs));
  };
  const agent = (target.agent = new Agent(options('ws://x:1/'), { logger, backoff, openLink }));
  await agent.run();
  // Told 12 s and 3 s: each plus half a second (the recording backoff's random 0.5); then the backoff from its base.
  expect(sleeps).toEqual([12_500, 3_500, 500, 1000]);
  expect(lines[0]).toMatchObject({ level: 40, retry_in_ms: 12_500, retry_cap_ms: 12_000 });
});

test('stop() during a wait ends run() at once', async () => {
  const { logger } = captureLogs();
  const agent = new Agent(options('ws://x:1/'), {
    logger,
    openLink: () => Promise.reject(new LinkError('unreachable', 'nope')),
    backoff: new Backoff({ baseMs: 3_600_000, maxMs: 3_600_000, random: () => 0.99 }),
  });
  const running = agent.run();
  await new Promise((resolve) => setTimeout(resolve, 50));
  // The wait is an hour long: run() ending here means stop() ended the wait, not the wait running out.
  await agent.stop();
  await running;
});
