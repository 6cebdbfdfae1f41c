import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { WebSocket } from 'ws';
import { basicHeader } from '../../../../test-support/api-client.js';
import { connectClient } from '../../../../test-support/agent-client.js';
import {
  AUTH,
  API_USER,
  clientRecord,
  startGatewayServer,
  waitFor,
  type GatewayServer,
} from '../gateway/helpers.js';
import { openOutput, startJobAgent, succeed, type JobAgent } from './job-agents.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary JSON
type Json = any;

interface Socket {
  ws: WebSocket;
  messages: Json[];
  /** Resolves when `count` messages have arrived. */
  received(count: number): Promise<void>;
  closed: Promise<{ code: number }>;
}

function openSocket(url: string, headers: Record<string, string> = {}): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const messages: Json[] = [];
    const waiters: (() => void)[] = [];
    ws.on('message', (data) => {
      messages.push(JSON.parse((data as Buffer).toString('utf8')));
      for (const wake of waiters.splice(0)) wake();
    });
    const closed = new Promise<{ code: number }>((done) => ws.once('close', (code) => done({ code })));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () =>
        reject(Object.assign(new Error('refused'), { status: res.statusCode, body: JSON.parse(body) })),
      );
    });
    ws.once('error', reject);
    ws.once('open', () =>
      resolve({
        ws,
        messages,
        closed,
        received: (count) =>
          waitUntil(
            () => messages.length >= count,
            (wake) => waiters.push(wake),
            closed,
          ),
      }),
    );
  });
}

/** Waits until `ready()` holds, re-checking whenever `subscribe` wakes it; fails if the socket closes first. */
async function waitUntil(
  ready: () => boolean,
  subscribe: (wake: () => void) => void,
  closed: Promise<unknown>,
) {
  let isClosed = false;
  void closed.then(() => (isClosed = true));
  while (!ready()) {
    if (isClosed) throw new Error('socket closed before the expected messages arrived');
    await Promise.race([new Promise<void>((wake) => subscribe(wake)), closed]);
  }
}

const refusal = async (promise: Promise<unknown>): Promise<{ status: number; body: Json }> => {
  const err = (await promise.then(
    () => undefined,
    (e: unknown) => e,
  )) as { status: number; body: Json } | undefined;
  expect(err?.status).toBeDefined();
  return err as { status: number; body: Json };
};

describe('live results over /ws/commands and /ws/scripts', () => {
  let t: GatewayServer;
  let web1: JobAgent;
  let web2: JobAgent;
  let wsBase: string;
  let token: string;

  beforeAll(async () => {
    t = await startGatewayServer();
    web1 = await startJobAgent(t, 'web-1');
    web2 = await startJobAgent(t, 'web-2');
    const gone = await connectClient(t.agent('agents-b'), { client_id: 'old-box' });
    await gone.close();
    await waitFor(async () => (await clientRecord(t, 'old-box'))?.connection_state === 'disconnected');
    wsBase = (t.server.apiUrl ?? '').replace(/^http/, 'ws');
    token = await t.api.login(...API_USER);
  });
  afterAll(async () => {
    await web1?.agent.close();
    await web2?.agent.close();
    await t?.stop();
  });

  test('refused before the upgrade: no or bad credentials 401, a foreign Origin 403, another path 404', async () => {
    const none = await refusal(openSocket(`${wsBase}/ws/commands`));
    expect(none.status).toBe(401);
    expect(none.body.errors[0]).toMatchObject({ code: 'ERR_AUTH_REQUIRED' });
    expect((await refusal(openSocket(`${wsBase}/ws/scripts?access_token=forged`))).status).toBe(401);
    const wrongPassword = await refusal(
      openSocket(`${wsBase}/ws/commands`, { authorization: basicHeader('admin', 'wrong') }),
    );
    expect(wrongPassword.status).toBe(401);
    const foreign = await refusal(
      openSocket(`${wsBase}/ws/commands?access_token=${token}`, { origin: 'https://evil.example' }),
    );
    expect(foreign.status).toBe(403);
    expect(foreign.body.errors[0]).toMatchObject({ code: 'ERR_FOREIGN_ORIGIN' });
    expect((await refusal(openSocket(`${wsBase}/ws/other?access_token=${token}`))).status).toBe(404);
    expect(web1.runs).toHaveLength(0);
  });

  test("rportcli's request: output chunks arrive as they happen, before each client's final job; then the stream ends", async () => {
    web1.runs.length = 0;
    web2.runs.length = 0;
    const box: { socket?: Socket } = {};
    // web-1 streams "hello ✓ done" in two parts, the ✓ split between them, and ends only after the first
    // chunk has reached the socket's reader.
    web1.behaviour = (job) => {
      void (async () => {
        const out = await openOutput(web1.agent, job.jid);
        const check = Buffer.from('✓');
        out.write('stdout', Buffer.concat([Buffer.from('hello '), check.subarray(0, 1)]));
        await waitFor(
          () => box.socket?.messages.some((m) => m.result?.stdout === 'hello '),
          5000,
          'first chunk',
        );
        out.write('stdout', Buffer.concat([check.subarray(1), Buffer.from(' done\n')]));
        out.write('stderr', Buffer.from('warning\n'));
        await out.end();
      })();
      return { result: new Promise(() => undefined) };
    };
    web2.behaviour = succeed;
    const socket = await openSocket(`${wsBase}/ws/commands?access_token=${token}`);
    box.socket = socket;
    // Key order and values as OpenRPort's command-line client sends them.
    socket.ws.send(
      '{"client_ids":["web-1","web-2"],"is_sudo":false,"execute_concurrently":false,"abort_on_error":true,' +
        '"timeout_sec":0,"command":"/usr/bin/echo hi","script":"","cwd":"","interpreter":""}',
    );
    // Without Origin (a command-line client) svcd ends the stream without a close frame, as rportd does, so the
    // client's own close is the first: 1006 is what a client sees that got no close frame.
    expect((await socket.closed).code).toBe(1006);
    const [first, second, third, final1, chunk2, final2, ...rest] = socket.messages;
    expect(rest).toEqual([]);
    const jid1 = final1.jid as string;
    expect(first).toEqual({
      jid: jid1,
      client_id: 'web-1',
      client_name: 'Name web-1',
      result: { stdout: 'hello ', stderr: '', summary: '' },
    });
    expect(second.result).toEqual({ stdout: '✓ done\n', stderr: '', summary: '' });
    expect(third.result).toEqual({ stdout: '', stderr: 'warning\n', summary: '' });
    expect(final1).toMatchObject({
      client_id: 'web-1',
      status: 'successful',
      command: '/usr/bin/echo hi',
      timeout_sec: 60,
      created_by: 'admin',
      result: { stdout: 'hello ✓ done\n', stderr: 'warning\n' },
    });
    expect(final1.finished_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)$/);
    expect(chunk2).toMatchObject({ client_id: 'web-2', result: { stdout: 'web-2 ran /usr/bin/echo hi\n' } });
    expect(chunk2.finished_at).toBeUndefined();
    expect(final2).toMatchObject({
      client_id: 'web-2',
      status: 'successful',
      multi_job_id: final1.multi_job_id,
    });
    // The run is an ordinary multi-client job afterwards.
    const stored = await t.api.get(`/commands/${final1.multi_job_id}`, { auth: AUTH });
    expect(stored.json.data.jobs.map((j: { status: string }) => j.status)).toEqual([
      'successful',
      'successful',
    ]);
  });

  test('/ws/scripts with Basic auth and the same Origin; a disconnected client counts as a failed final', async () => {
    web1.behaviour = succeed;
    web2.behaviour = () => ({ result: { end: { status: 'failed', exit_code: 1, error: 'exit status 1' } } });
    const socket = await openSocket(`${wsBase}/ws/scripts`, {
      authorization: basicHeader(...API_USER),
      origin: new URL(t.server.apiUrl ?? '').origin,
    });
    socket.ws.send(
      JSON.stringify({
        client_ids: ['web-1', 'web-2', 'old-box'],
        script: Buffer.from('uptime').toString('base64'),
        command: '',
        execute_concurrently: true,
      }),
    );
    expect((await socket.closed).code).toBe(1000);
    const finals = socket.messages.filter((m) => m.finished_at);
    expect(Object.fromEntries(finals.map((m) => [m.client_id, m.status]))).toEqual({
      'web-1': 'successful',
      'web-2': 'failed',
      'old-box': 'failed',
    });
    expect(finals.find((m) => m.client_id === 'old-box').error).toBe('client is not connected');
    for (const m of finals) expect(m).toMatchObject({ is_script: true, command: 'uptime' });
  });

  test('a bad request gets an errors message, then the socket closes; nothing runs', async () => {
    web1.runs.length = 0;
    const cases: [string, string, RegExp][] = [
      ['/ws/commands', 'not json', /Invalid JSON data/],
      ['/ws/commands', '[]', /Invalid JSON data/],
      ['/ws/commands', '{"command":"ls"}', /Missing targeting parameters/],
      ['/ws/commands', '{"command":"ls","client_ids":["nobody"]}', /Client 'nobody' not found/],
      ['/ws/commands', '{"command":"ls","script":"bHM=","client_ids":["web-1"]}', /script: must be empty/],
      ['/ws/scripts', '{"script":"","client_ids":["web-1"]}', /script: must not be empty/],
      ['/ws/commands', '{"command":"ls","client_ids":["web-1"],"tags":{"tags":["x"]}}', /Multiple targeting/],
    ];
    const origin = new URL(t.server.apiUrl ?? '').origin;
    for (const [path, request, title] of cases) {
      // With Origin (a browser) the close frame carries 1008; without, the stream just ends (see SocketEnding).
      const socket = await openSocket(`${wsBase}${path}?access_token=${token}`, { origin });
      socket.ws.send(request);
      const { code } = await socket.closed;
      expect(code, request).toBe(1008);
      expect(socket.messages, request).toHaveLength(1);
      expect(socket.messages[0].jid, request).toBeUndefined();
      expect(socket.messages[0].errors[0].title, request).toMatch(title);
    }
    const cli = await openSocket(`${wsBase}/ws/commands?access_token=${token}`);
    cli.ws.send('{"command":"ls"}');
    expect((await cli.closed).code).toBe(1006);
    expect(cli.messages[0].errors[0].title).toMatch(/Missing targeting parameters/);
    expect(web1.runs).toHaveLength(0);
  });

  test('svcd stopping closes open sockets with 1001 (going away)', async () => {
    web1.runs.length = 0;
    web1.behaviour = () => ({ result: new Promise(() => undefined) });
    const socket = await openSocket(`${wsBase}/ws/commands?access_token=${token}`);
    socket.ws.send(JSON.stringify({ command: '/usr/bin/sleep 9', client_ids: ['web-1'] }));
    await waitFor(() => web1.runs.length === 1);
    await web1.agent.close();
    await web2.agent.close();
    await t.restart();
    expect((await socket.closed).code).toBe(1001);
  });

  test('the test page is served only when enable_ws_test_endpoints is set', async () => {
    const page = await fetch(`${t.server.apiUrl}/test/scripts/ui`);
    expect(page.status).toBe(404);
    const enabled = await startGatewayServer({ server: { enable_ws_test_endpoints: true } });
    try {
      const res = await fetch(`${enabled.server.apiUrl}/test/scripts/ui`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await res.text()).toContain('/api/v1/ws/scripts?access_token=');
    } finally {
      await enabled.stop();
    }
  });
});
