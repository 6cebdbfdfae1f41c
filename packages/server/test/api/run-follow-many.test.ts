import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { WebSocket } from 'ws';
import { basicHeader } from '../../../../test-support/api-client.js';
import { API_USER, AUTH, startGatewayServer, type GatewayServer } from '../gateway/helpers.js';
import { startJobAgent, type JobAgent } from './job-agents.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary JSON
type Json = any;

/** Clients of the run; several times the window, so the run creates its children in many steps. */
const CLIENTS = 120;
const WINDOW = 16;
/** Each job ends this long after it started (at random), so results arrive while windows are still created. */
const MAX_JOB_MS = 1500;

interface Followed {
  /** Every message, in the order received. */
  messages: Json[];
  /** How many messages had arrived when the socket closed, and its close code. */
  closed: Promise<{ code: number; received: number }>;
}

/** Follows as a browser does (with Origin, so svcd ends with a close frame: 1000 when everything was sent). */
function follow(url: string, origin: string): Promise<Followed> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { authorization: basicHeader(...API_USER), origin } });
    const messages: Json[] = [];
    ws.on('message', (data) => messages.push(JSON.parse((data as Buffer).toString('utf8'))));
    const closed = new Promise<{ code: number; received: number }>((done) =>
      ws.once('close', (code) => done({ code, received: messages.length })),
    );
    ws.once('error', reject);
    ws.once('open', () => resolve({ messages, closed }));
  });
}

describe('following a concurrent run on hundreds of clients over /ws/commands/{jid}', () => {
  let t: GatewayServer;
  const agents: JobAgent[] = [];

  beforeAll(async () => {
    t = await startGatewayServer({ concurrentJobWindow: WINDOW });
    for (let i = 0; i < CLIENTS; i += 30) {
      const batch = Array.from({ length: Math.min(30, CLIENTS - i) }, (_, k) =>
        startJobAgent(t, `many-${String(i + k).padStart(3, '0')}`, { labels: { fleet: 'many' } }),
      );
      agents.push(...(await Promise.all(batch)));
    }
    // Each job ends after a random delay (the agent's own work, as `noop 0-1500` does in the benchmark).
    for (const agent of agents)
      agent.behaviour = () => ({
        result: new Promise((done) => setTimeout(() => done({}), Math.random() * MAX_JOB_MS)),
      });
  }, 120_000);
  afterAll(async () => {
    await Promise.all(agents.map((a) => a.agent.close()));
    await t?.stop();
  });

  test('one final record per target, and the socket closes only after the last', async () => {
    const started = await t.api.post(
      '/commands',
      { command: 'work', labels: { operator: 'OR', labels: ['fleet:many'] }, execute_concurrently: true },
      { auth: AUTH },
    );
    expect(started.status).toBe(200);
    const jid = started.json.data.jid as string;
    const api = t.server.apiUrl ?? '';
    const socket = await follow(`${api.replace(/^http/, 'ws')}/ws/commands/${jid}`, new URL(api).origin);

    const { code, received } = await socket.closed;
    expect(code).toBe(1000);
    expect(received).toBe(socket.messages.length);
    const finals: Json[] = socket.messages.filter((m) => typeof m.status === 'string');
    // Every message is a chunk or a final record, never an error.
    expect(socket.messages.filter((m) => m.errors)).toEqual([]);
    const byClient = new Map<string, Json[]>();
    for (const f of finals) byClient.set(f.client_id, [...(byClient.get(f.client_id) ?? []), f]);
    const twice = [...byClient].filter(([, records]) => records.length > 1).map(([id]) => id);
    expect(twice).toEqual([]);
    const missing = agents.map((a) => a.id).filter((id) => !byClient.has(id));
    expect(missing).toEqual([]);
    expect(finals).toHaveLength(CLIENTS);
    expect(finals.filter((f) => f.status !== 'successful').map((f) => `${f.client_id}: ${f.status}`)).toEqual(
      [],
    );
    for (const f of finals) expect(f).toMatchObject({ multi_job_id: jid, exit_code: 0 });

    // When the socket said it was done, the run had ended: every child is stored with its result.
    const run = await t.api.get(`/commands/${jid}?fields[commands]=status`, { auth: AUTH });
    expect(run.json.data.status).toBe('successful');
    expect(run.json.meta.jobs).toMatchObject({ successful: CLIENTS, running: 0 });
  }, 60_000);
});
