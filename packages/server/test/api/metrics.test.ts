/**
 * Prometheus metrics of a real svcd in this process: the documented series are there and follow what happens —
 * agents connecting and leaving, jobs running and ending, a tunnel carrying bytes, API requests, refused agents.
 */
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import type { ClientChannel } from 'ssh2';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { connectClient, openSsh, type TestAgent } from '../../../../test-support/agent-client.js';
import { freePortBlock } from '../../../../test-support/process.js';
import { ControlError } from '../../../platform/src/control-peer.js';
import { encodeJobData, encodeJobEnd, encodeJobHeader } from '../../../platform/src/job-frames.js';
import { CONTROL_ERRORS, JOB_OUTPUT_SUBSYSTEM } from '../../../protocol/src/index.js';
import { svcdConfigSchema } from '../../src/config/schema.js';
import { descriptorReserve } from '../../src/infra/descriptor-gauge.js';
import { readDescriptorLimit } from '../../../platform/src/descriptors.js';
import { AUTH, logsWith, startGatewayServer, waitFor, type GatewayServer } from '../gateway/helpers.js';
import { jobEnd } from './job-agents.js';

/** Every series svcd documents (besides Node's own process_* and nodejs_* series). */
const SVCD_SERIES = [
  'svcd_clients',
  'svcd_client_connections_total',
  'svcd_agent_handshakes_in_flight',
  'svcd_agent_handshakes_waiting',
  'svcd_agent_handshakes_under_way',
  'svcd_agent_upgrades_waiting',
  'svcd_agent_refusals_total',
  'svcd_descriptors',
  'svcd_jobs_total',
  'svcd_jobs_running',
  'svcd_tunnels_open',
  'svcd_tunnel_connections_open',
  'svcd_tunnel_connections_total',
  'svcd_tunnel_bytes_total',
  'svcd_http_request_duration_seconds',
];

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

class Scrape {
  constructor(
    readonly text: string,
    readonly samples: Sample[],
  ) {}

  /** The value of the sample with exactly these labels; undefined when there is none. */
  value(name: string, labels: Record<string, string> = {}): number | undefined {
    const wanted = JSON.stringify(Object.entries(labels).sort());
    return this.samples.find(
      (s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === wanted,
    )?.value;
  }

  /** The metric names declared with # TYPE. */
  declared(): string[] {
    return [...this.text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1] ?? '');
  }
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

function parseExposition(text: string): Scrape {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL)) labels[key ?? ''] = value ?? '';
    samples.push({ name: match[1] ?? '', labels, value: Number(match[3]) });
  }
  return new Scrape(text, samples);
}

/** An agent that runs jobs (answering job.run) and relays tunnel connections by echoing their bytes. */
function serveJobsAndTunnels(agent: TestAgent, refuseJobs: () => boolean): void {
  agent.peer.on('job.run', () => {
    if (refuseJobs()) throw new ControlError(CONTROL_ERRORS.refused, 'refused by the test agent');
    return { pid: 42, started_at: new Date().toISOString() };
  });
  agent.peer.on('tunnel.allowed', () => ({ allowed: true }));
  agent.peer.on('tunnel.check_port', () => ({ open: true }));
  agent.peer.on(
    'tunnel.open',
    ({ host, port }) =>
      new Promise<Record<string, never>>((resolve, reject) =>
        agent.ssh.forwardIn(host, port, (err) => (err ? reject(err) : resolve({}))),
      ),
  );
  agent.peer.on('tunnel.close', () => ({}));
  agent.ssh.on('tcp connection', (_details, accept) => {
    const channel: ClientChannel = accept();
    channel.on('data', (chunk: Buffer) => channel.write(chunk));
    channel.on('end', () => channel.end());
  });
}

async function sendSuccess(agent: TestAgent, jid: string): Promise<void> {
  const channel = await new Promise<ClientChannel>((resolve, reject) =>
    agent.ssh.subsys(JOB_OUTPUT_SUBSYSTEM, (err, ch) => (err ? reject(err) : resolve(ch))),
  );
  const closed = once(channel, 'close');
  channel.resume();
  channel.write(encodeJobHeader({ jid, replay: false }));
  for (const frame of encodeJobData('stdout', Buffer.from('done\n'))) channel.write(frame);
  channel.write(encodeJobEnd(jobEnd()));
  await closed;
}

/** Sends `bytes` through the tunnel port and waits until the echo is back; the connection stays open. */
async function echoThrough(socket: Socket, bytes: number): Promise<void> {
  let received = 0;
  const back = new Promise<void>((resolve) => {
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received < bytes) return;
      socket.off('data', onData);
      resolve();
    };
    socket.on('data', onData);
  });
  socket.write(Buffer.alloc(bytes, 7));
  await back;
}

describe('Prometheus metrics on [api] metrics_address', () => {
  let t: GatewayServer;
  let metricsUrl: string;
  let agent: TestAgent;
  let refuseJobs = false;

  const scrape = async (): Promise<Scrape> => {
    const res = await fetch(metricsUrl);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return parseExposition(await res.text());
  };
  /** Scrapes until `check` holds on a scrape (values read at scrape time may trail an event by a tick). */
  const scrapeUntil = (what: string, check: (s: Scrape) => boolean) =>
    waitFor(
      async () => {
        const s = await scrape();
        return check(s) ? s : undefined;
      },
      10_000,
      what,
    );

  beforeAll(async () => {
    const port = await freePortBlock(1);
    t = await startGatewayServer({
      server: { used_ports: [String(port)] },
      api: { metrics_address: '127.0.0.1:0' },
    });
    metricsUrl = t.server.metricsUrl ?? '';
  });
  afterAll(async () => {
    await agent?.close();
    await t?.stop();
  });

  test('start-up logs where the metrics listen; the listener answers GET /metrics only, the API not at all', async () => {
    expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(logsWith(t, 'metrics listening')[0]).toMatchObject({ url: metricsUrl });
    const base = metricsUrl.replace(/\/metrics$/, '');
    const other = await fetch(`${base}/api/v1/status`);
    expect(other.status).toBe(404);
    expect(((await other.json()) as { errors: { code: string }[] }).errors[0]?.code).toBe(
      'ERR_ROUTE_NOT_FOUND',
    );
    const post = await fetch(metricsUrl, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    const onApi = await fetch(`${t.server.apiUrl?.replace(/\/api\/v1$/, '')}/metrics`);
    expect(onApi.status).toBe(404);
  });

  test('the documented series are there, with Node memory and event-loop lag', async () => {
    const s = await scrape();
    const declared = s.declared();
    for (const name of SVCD_SERIES) expect(declared, name).toContain(name);
    for (const name of [
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_seconds',
      'nodejs_eventloop_lag_p99_seconds',
    ])
      expect(declared, name).toContain(name);
    expect(s.value('process_resident_memory_bytes')).toBeGreaterThan(10_000_000);
    // Their cost grows with the connections (see svcd-metrics.ts).
    for (const name of ['process_open_fds', 'nodejs_active_handles', 'nodejs_active_resources'])
      expect(declared, name).not.toContain(name);
    expect(s.value('svcd_clients', { state: 'connected' })).toBe(0);
    expect(s.value('svcd_clients', { state: 'disconnected' })).toBe(0);
    for (const status of ['running', 'successful', 'failed', 'unknown'])
      expect(s.value('svcd_jobs_total', { status })).toBe(0);
    expect(s.value('svcd_tunnel_bytes_total', { direction: 'to_client' })).toBe(0);
    expect(s.value('svcd_agent_handshakes_in_flight')).toBe(0);
    // This test process is svcd: the limit is its own; the listeners and the scrape hold some open.
    const limit = readDescriptorLimit()!.soft;
    expect(s.value('svcd_descriptors', { kind: 'limit' })).toBe(limit);
    expect(s.value('svcd_descriptors', { kind: 'agent_high_water' })).toBe(limit - descriptorReserve(limit));
    expect(s.value('svcd_descriptors', { kind: 'open' })).toBeGreaterThan(3);
  });

  test('clients connecting and leaving move the client gauges and the connection counter', async () => {
    agent = await connectClient(t.agent('agents-a'), { client_id: 'web-1' });
    serveJobsAndTunnels(agent, () => refuseJobs);
    const brief = await connectClient(t.agent('agents-b'), { client_id: 'brief-1' });
    let s = await scrape();
    expect(s.value('svcd_clients', { state: 'connected' })).toBe(2);
    expect(s.value('svcd_client_connections_total')).toBe(2);
    await brief.close();
    s = await scrapeUntil(
      'brief-1 disconnected',
      (x) => x.value('svcd_clients', { state: 'connected' }) === 1,
    );
    expect(s.value('svcd_clients', { state: 'disconnected' })).toBe(1);
    expect(s.value('svcd_client_connections_total')).toBe(2);
  });

  test('jobs count by status: created running, then ended successful; a refused one failed', async () => {
    const res = await t.api.post('/clients/web-1/commands', { command: '/usr/bin/true' }, { auth: AUTH });
    expect(res.status, res.text).toBe(200);
    let s = await scrape();
    expect(s.value('svcd_jobs_total', { status: 'running' })).toBe(1);
    expect(s.value('svcd_jobs_running')).toBe(1);
    await sendSuccess(agent, res.json.data.jid as string);
    s = await scrape();
    expect(s.value('svcd_jobs_total', { status: 'successful' })).toBe(1);
    expect(s.value('svcd_jobs_running')).toBe(0);

    refuseJobs = true;
    const refused = await t.api.post('/clients/web-1/commands', { command: '/usr/bin/true' }, { auth: AUTH });
    refuseJobs = false;
    expect(refused.status, refused.text).toBe(200);
    s = await scrape();
    expect(s.value('svcd_jobs_total', { status: 'running' })).toBe(2);
    expect(s.value('svcd_jobs_total', { status: 'failed' })).toBe(1);
    expect(s.value('svcd_jobs_running')).toBe(0);
  });

  test('a tunnel counts as open, and its bytes count while a connection is open and after it closed', async () => {
    const res = await t.api.request('PUT', '/clients/web-1/tunnels?remote=127.0.0.1:7&check_port=0', {
      auth: AUTH,
    });
    expect(res.status, res.text).toBe(200);
    const lport = Number(res.json.data.lport);
    let s = await scrape();
    expect(s.value('svcd_tunnels_open')).toBe(1);

    const socket = connect({ host: '127.0.0.1', port: lport });
    await once(socket, 'connect');
    await echoThrough(socket, 1000);
    s = await scrape();
    expect(s.value('svcd_tunnel_connections_open')).toBe(1);
    expect(s.value('svcd_tunnel_connections_total')).toBe(1);
    expect(s.value('svcd_tunnel_bytes_total', { direction: 'to_client' })).toBe(1000);
    expect(s.value('svcd_tunnel_bytes_total', { direction: 'from_client' })).toBe(1000);

    await echoThrough(socket, 500);
    socket.end();
    await once(socket, 'close');
    s = await scrapeUntil(
      'the tunnel connection closed',
      (x) => x.value('svcd_tunnel_connections_open') === 0,
    );
    expect(s.value('svcd_tunnel_connections_total')).toBe(1);
    expect(s.value('svcd_tunnel_bytes_total', { direction: 'to_client' })).toBe(1500);
    expect(s.value('svcd_tunnel_bytes_total', { direction: 'from_client' })).toBe(1500);
  });

  test('API requests count by route pattern and status, never by the raw URL', async () => {
    const count = (s: Scrape, route: string, status: string) =>
      s.value('svcd_http_request_duration_seconds_count', { method: 'GET', route, status }) ?? 0;
    const before = await scrape();
    for (let i = 0; i < 3; i++) expect((await t.api.get('/status', { auth: AUTH })).status).toBe(200);
    expect((await t.api.get('/clients/no-such-client-77', { auth: AUTH })).status).toBe(404);
    expect((await t.api.get('/no-such-route-88', { auth: AUTH })).status).toBe(404);
    const after = await scrape();
    expect(count(after, '/api/v1/status', '200') - count(before, '/api/v1/status', '200')).toBe(3);
    expect(count(after, '/api/v1/clients/:id', '404') - count(before, '/api/v1/clients/:id', '404')).toBe(1);
    expect(count(after, 'unmatched', '404') - count(before, 'unmatched', '404')).toBe(1);
    expect(after.text).not.toContain('no-such-client-77');
    expect(after.text).not.toContain('no-such-route-88');
    const slowest = after.value('svcd_http_request_duration_seconds_bucket', {
      method: 'GET',
      route: '/api/v1/status',
      status: '200',
      le: '+Inf',
    });
    expect(slowest).toBe(count(after, '/api/v1/status', '200'));
  });

  test('refused agents count by reason: plain HTTP on the agent port, a wrong client password', async () => {
    const res = await fetch(`http://127.0.0.1:${t.server.clientPort}/`);
    expect(res.status).toBe(426);
    await expect(openSsh({ ...t.agent('agents-a'), password: 'wrong-password' })).rejects.toThrow();
    const s = await scrapeUntil(
      'the login refusal',
      (x) => x.value('svcd_agent_refusals_total', { reason: 'login_failed' }) !== undefined,
    );
    expect(s.value('svcd_agent_refusals_total', { reason: 'upgrade_required' })).toBe(1);
    expect(s.value('svcd_agent_refusals_total', { reason: 'login_failed' })).toBeGreaterThanOrEqual(1);
  });
});

describe('[api] metrics_address', () => {
  test('is off by default', async () => {
    const t = await startGatewayServer();
    try {
      expect(t.config.api.metrics_address).toBe('');
      expect(t.server.metricsUrl).toBeUndefined();
      expect(logsWith(t, 'metrics listening')).toEqual([]);
    } finally {
      await t.stop();
    }
  });

  test('must be an address of its own, not the API address', () => {
    const result = svcdConfigSchema.safeParse({
      api: { address: '127.0.0.1:3000', auth: 'admin:secret-1', metrics_address: '127.0.0.1:3000' },
    });
    expect(result.success).toBe(false);
    expect(result.error?.issues).toContainEqual(
      expect.objectContaining({
        path: ['api', 'metrics_address'],
        message: expect.stringContaining('must differ from address') as string,
      }),
    );
    const bad = svcdConfigSchema.safeParse({ api: { metrics_address: 'localhost' } });
    expect(bad.error?.issues[0]?.message).toContain('expected host:port');
  });
});
