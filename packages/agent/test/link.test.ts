import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, test, vi } from 'vitest';
import { Backoff } from '@svc/platform';
import { openRaw } from '../../../test-support/raw-http.js';
import { startTestServer, type TestServer, type TestServerOptions } from '../../../test-support/server.js';
import { Agent, type AgentOptions } from '../src/connection/agent.js';
import { defaultExecSettings } from '../src/exec/exec-settings.js';
import { NO_JOBS_DATA_DIR } from './support/exec.js';
import { LinkError } from '../src/connection/link-error.js';
import { openLink, type Link, type LinkOptions } from '../src/connection/ssh-link.js';
import { captureLogs } from './support/log-capture.js';

let svcd: TestServer;
let url: string;
const CREDENTIALS = { id: 'client1', password: 'pass-1234' };

beforeAll(async () => {
  svcd = await startTestServer({
    store: 'static',
    server: { auth: `${CREDENTIALS.id}:${CREDENTIALS.password}`, client_login_wait: 0 },
  });
  url = `ws://127.0.0.1:${svcd.server.clientPort}/`;
});

afterAll(() => svcd.stop());

const linkOptions = (overrides: Partial<LinkOptions> = {}): LinkOptions => ({
  url,
  credentials: CREDENTIALS,
  fingerprint: undefined,
  handshakeTimeoutMs: 10_000,
  ...overrides,
});

const agentOptions = (clientId: string, overrides: Partial<AgentOptions> = {}): AgentOptions => ({
  serverUrl: url,
  credentials: CREDENTIALS,
  clientId,
  name: `name of ${clientId}`,
  tags: ['linux', 'test'],
  labels: { env: 'test' },
  fingerprint: svcd.server.fingerprint,
  tunnelAllowed: [],
  keepaliveIntervalMs: 20_000,
  maxRetryIntervalMs: 60_000,
  dataDir: NO_JOBS_DATA_DIR,
  exec: defaultExecSettings(),
  ...overrides,
});

async function refusal(options: LinkOptions): Promise<LinkError> {
  const error: unknown = await openLink(options).then(
    (link) => {
      link.destroy();
      throw new Error('the link was expected to be refused');
    },
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(LinkError);
  return error as LinkError;
}

test('the agent connects, says hello with its facts, and leaves on stop', async () => {
  const { logger, lines } = captureLogs();
  const agent = new Agent(agentOptions('agent-hello'), { logger });
  const running = agent.run();
  try {
    // svcd registers the client before its hello reply reaches the agent, which logs only then.
    await vi.waitFor(
      () => {
        expect(svcd.server.connections.get('agent-hello')).toBeDefined();
        expect(lines.some((line) => line.msg === 'connected to svcd')).toBe(true);
      },
      { timeout: 10_000 },
    );
    const record = svcd.server.clients.get('agent-hello');
    expect(record).toMatchObject({
      id: 'agent-hello',
      name: 'name of agent-hello',
      tags: ['linux', 'test'],
      client_auth_id: 'client1',
    });
    expect(record?.num_cpus).toBeGreaterThan(0);
    expect(record?.hostname).not.toBe('');
    expect(svcd.server.connections.get('agent-hello')?.sessionId).toBe(agent.sessionId);
    const connected = lines.find((line) => line.msg === 'connected to svcd');
    expect(connected).toMatchObject({ fingerprint: svcd.server.fingerprint, client_id: 'agent-hello' });
  } finally {
    await agent.stop();
    await running;
  }
  await vi.waitFor(() => expect(svcd.server.connections.get('agent-hello')).toBeUndefined());
});

test('a fingerprint prefix in any case is accepted; without one the actual fingerprint is reported', async () => {
  const prefix = svcd.server.fingerprint.slice(0, 8).toUpperCase();
  const pinned = await openLink(linkOptions({ fingerprint: prefix }));
  expect(pinned.fingerprint).toBe(svcd.server.fingerprint);
  pinned.close();
  const unpinned = await openLink(linkOptions());
  expect(unpinned.fingerprint).toBe(svcd.server.fingerprint);
  unpinned.close();
});

test('a wrong fingerprint is refused with the expected and the actual value', async () => {
  const error = await refusal(linkOptions({ fingerprint: 'de:ad:be:ef' }));
  expect(error.kind).toBe('fingerprint');
  expect(error.message).toContain(svcd.server.fingerprint);
  expect(error.message).toContain('de:ad:be:ef');
});

test('a wrong password or unknown id is refused as an authentication failure', async () => {
  const wrongPassword = await refusal(linkOptions({ credentials: { id: 'client1', password: 'wrong' } }));
  expect(wrongPassword.kind).toBe('auth');
  expect(wrongPassword.message).toMatch(/client1.*All configured authentication methods failed/);
  const unknownId = await refusal(linkOptions({ credentials: { id: 'nobody', password: 'pass-1234' } }));
  expect(unknownId.kind).toBe('auth');
});

test('a second agent with the same client id is refused as already connected', async () => {
  const first = new Agent(agentOptions('agent-twice'), { logger: captureLogs().logger });
  const firstRun = first.run();
  const { logger, lines } = captureLogs();
  const target: { agent?: Agent } = {};
  const backoff = new Backoff({
    sleep: () => {
      void target.agent?.stop();
      return Promise.resolve();
    },
  });
  const second = (target.agent = new Agent(agentOptions('agent-twice'), { logger, backoff }));
  try {
    await vi.waitFor(() => expect(svcd.server.connections.get('agent-twice')).toBeDefined(), {
      timeout: 10_000,
    });
    await second.run();
    const refused = lines.find((line) => line.level === 50);
    expect(refused?.msg).toMatch(
      /^svcd refused client id "agent-twice": another agent with this id is connected \(svcd: client 'agent-twice' is already connected\)\. A second svc on one host needs its own --data-dir \(this one uses .+\) or its own --id; .*; retrying in /,
    );
    expect(svcd.server.connections.get('agent-twice')?.sessionId).toBe(first.sessionId);
  } finally {
    await first.stop();
    await firstRun;
  }
});

test('after svcd drops the link the agent reconnects', async () => {
  const { logger, lines } = captureLogs();
  const agent = new Agent(agentOptions('agent-again'), { logger });
  const running = agent.run();
  try {
    await vi.waitFor(() => expect(svcd.server.connections.get('agent-again')).toBeDefined(), {
      timeout: 10_000,
    });
    svcd.server.connections.get('agent-again')?.close('test drops the link');
    await vi.waitFor(() => expect(lines.filter((line) => line.msg === 'connected to svcd')).toHaveLength(2), {
      timeout: 10_000,
    });
    expect(lines.some((line) => line.msg.startsWith('disconnected from svcd'))).toBe(true);
    expect(svcd.server.connections.get('agent-again')).toBeDefined();
  } finally {
    await agent.stop();
    await running;
  }
});

test('a server that vanishes without a close frame (killed) is noticed at once, not at the next ping', async () => {
  // A TCP relay in front of svcd: cutting its sockets is what the agent sees when svcd is killed.
  const sockets = new Set<Socket>();
  const relay = createServer((inbound) => {
    const outbound = connect(svcd.server.clientPort, '127.0.0.1');
    for (const socket of [inbound, outbound]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const relayUrl = `ws://127.0.0.1:${(relay.address() as AddressInfo).port}/`;
  try {
    const link = await openLink(linkOptions({ url: relayUrl }));
    for (const socket of sockets) socket.destroy();
    // The link itself never pings (the agent's control pings do): only the socket's end can report it gone.
    expect(await link.closed).toBe('connection closed');
  } finally {
    await new Promise<void>((resolve) => relay.close(() => resolve()));
  }
});

/**
 * A real svcd with one handshake slot whose agent listener is tuned as given, and an upgrade that never speaks SSH
 * (101 received): it holds the slot, and a place under way, so the next upgrade meets svcd's own refusal.
 */
async function heldServer(agentLink: NonNullable<TestServerOptions['tuning']>['agentLink']) {
  const server = await startTestServer({
    store: 'static',
    server: { auth: `${CREDENTIALS.id}:${CREDENTIALS.password}`, max_concurrent_ssh_handshakes: 1 },
    api: { metrics_address: '127.0.0.1:0' },
    tuning: { agentLink },
  });
  const holder = await openRaw(
    server.server.clientPort,
    'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: svc-v1\r\n\r\n',
  );
  const [answer] = (await once(holder.socket, 'data')) as [Buffer];
  expect(answer.toString()).toMatch(/^HTTP\/1\.1 101 /);
  return {
    url: `ws://127.0.0.1:${server.server.clientPort}/`,
    /** The value of one of svcd's metrics without labels. */
    metric: async (name: string): Promise<number | undefined> => {
      const text = await (await fetch(server.server.metricsUrl ?? '')).text();
      const line = text.split('\n').find((l) => l.startsWith(`${name} `));
      return line === undefined ? undefined : Number(line.slice(name.length + 1));
    },
    holder,
    stop: async () => {
      holder.socket.destroy();
      await server.stop();
    },
  };
}

test("svcd's refusal of the upgrade is reported with the status and svcd's reason", async () => {
  // No queue for a handshake slot: the next upgrade is answered 503.
  const busy = await heldServer({ handshakeQueueLimit: 0 });
  try {
    const error = await refusal(linkOptions({ url: busy.url }));
    expect(error.kind).toBe('unreachable');
    expect(error.message).toMatch(
      /^cannot open a WebSocket to ws:\/\/127\.0\.0\.1:\d+\/: Unexpected server response: 503 Service Unavailable \(svcd: Too many agents are connecting at once; retry later; handshake queue: queue_full\)$/,
    );
  } finally {
    await busy.stop();
  }
});

test('past the handshakes under way svcd says when to come back, and the refusal carries it', async () => {
  // One handshake under way at most, and no waiting for a place, not even for agents that would wait patiently.
  const busy = await heldServer({
    handshakesUnderWayPerSlot: 1,
    admissionQueueSeconds: 0,
    admissionPatientMax: 0,
  });
  try {
    // Before any login is measured svcd assumes a place frees every 2 s: the first agent refused comes back in 2.
    const first = await refusal(linkOptions({ url: busy.url }));
    expect(first).toMatchObject({ kind: 'unreachable', retryAfterMs: 2000 });
    expect(first.message).toMatch(
      /503 Service Unavailable \(svcd: Too many agents are connecting at once; retry later; 1 agent handshake is under way; come back in 2 s\)$/,
    );
    expect((await refusal(linkOptions({ url: busy.url }))).retryAfterMs).toBe(4000);
    busy.holder.socket.destroy();
    // The place is free once svcd has seen the close.
    let link: Link | undefined;
    for (let attempt = 0; !link && attempt < 50; attempt++)
      link = await openLink(linkOptions({ url: busy.url })).catch(() => undefined);
    expect(link).toBeDefined();
    link?.close();
  } finally {
    await busy.stop();
  }
});

test('past the handshakes under way svc waits its turn while svcd says it still waits, beyond its own deadline', async () => {
  const busy = await heldServer({
    handshakesUnderWayPerSlot: 1,
    admissionQueueSeconds: 0,
    admissionStillWaitingMs: 100,
  });
  try {
    const heard: (number | undefined)[] = [];
    let wake = () => undefined as void;
    const opening = openLink(
      linkOptions({
        url: busy.url,
        handshakeTimeoutMs: 400,
        onWaiting: (ahead) => {
          heard.push(ahead);
          wake();
        },
      }),
    );
    // Eight words 100 ms apart: twice the agent's 400 ms for the upgrade, which each of them restarted.
    await new Promise<void>((resolve) => {
      wake = () => void (heard.length >= 8 && resolve());
    });
    expect([
      await busy.metric('svcd_agent_handshakes_under_way'),
      await busy.metric('svcd_agent_upgrades_waiting'),
    ]).toEqual([1, 1]);
    busy.holder.socket.destroy();
    const link = await opening;
    expect(new Set(heard)).toEqual(new Set([0]));
    link.close();
  } finally {
    await busy.stop();
  }
});
