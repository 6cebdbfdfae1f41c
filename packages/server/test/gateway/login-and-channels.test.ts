import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { WebSocket } from 'ws';
import { ControlPeer } from '../../../platform/src/control-peer.js';
import { connectAgent, makeHello, openSsh, openSubsystem } from '../../../../test-support/agent-client.js';
import { clientRecord, logsWith, startGatewayServer, waitFor, type GatewayServer } from './helpers.js';

/** Sends a raw HTTP request (optionally an upgrade) to the agent listener and reads the answer. */
function rawRequest(port: number, headers: Record<string, string>) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
    (resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/', headers });
      req.on('response', (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('upgrade', (res, socket) => {
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '' });
      });
      req.on('error', reject);
      req.end();
    },
  );
}

const upgrade = (protocol?: string): Record<string, string> => ({
  connection: 'Upgrade',
  upgrade: 'websocket',
  'sec-websocket-version': '13',
  'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
  ...(protocol === undefined ? {} : { 'sec-websocket-protocol': protocol }),
});

describe('agent login, channels and the WebSocket upgrade', () => {
  let t: GatewayServer;
  beforeAll(async () => {
    t = await startGatewayServer({ tuning: { helloTimeoutMs: 700 } });
  });
  afterAll(() => t?.stop());

  test('a wrong password is refused and logged with the auth id and IP, never the password', async () => {
    const options = { ...t.agent(), password: 'not-the-password-42' };
    await expect(openSsh(options)).rejects.toThrow(/authentication methods failed/);
    const refused = await waitFor(() =>
      logsWith(t, 'agent login refused').find((l) => l.client_auth_id === 'agents-a'),
    );
    expect(refused).toMatchObject({ level: 40, client_auth_id: 'agents-a', ip: '127.0.0.1' });
    expect(JSON.stringify(t.logs)).not.toContain('not-the-password-42');
  });

  test('an unknown client-auth id is refused', async () => {
    const options = { ...t.agent(), authId: 'nobody', password: 'secret-a-123' };
    await expect(openSsh(options)).rejects.toThrow(/authentication methods failed/);
    expect(logsWith(t, 'agent login refused').some((l) => l.client_auth_id === 'nobody')).toBe(true);
  });

  test('a wrong host key fingerprint makes the agent refuse the server', async () => {
    await expect(openSsh({ ...t.agent(), fingerprint: '00:11:22' })).rejects.toThrow(/verification failed/);
  });

  test('subsystems other than svc-control, a second control channel and other channel types are refused', async () => {
    const link = await openSsh(t.agent());
    try {
      await expect(openSubsystem(link.ssh, 'sftp')).rejects.toThrow();
      await expect(openSubsystem(link.ssh, 'svc-other')).rejects.toThrow();
      expect(logsWith(t, 'agent subsystem refused').map((l) => l.subsystem)).toEqual(['sftp', 'svc-other']);
      const channel = await openSubsystem(link.ssh, 'svc-control');
      const peer = new ControlPeer(channel, { side: 'agent' });
      await peer.request('hello', makeHello({ client_id: 'one-channel' }));
      await expect(openSubsystem(link.ssh, 'svc-control')).rejects.toThrow();
      await expect(
        new Promise((resolve, reject) =>
          link.ssh.forwardOut('127.0.0.1', 1234, '127.0.0.1', 80, (err, ch) =>
            err ? reject(err) : resolve(ch),
          ),
        ),
      ).rejects.toThrow();
      // The control channel still works.
      await expect(peer.request('ping', {})).resolves.toEqual({});
    } finally {
      link.ssh.end();
      await link.closed;
    }
  });

  test('requests before hello are answered not_ready', async () => {
    const agent = await connectAgent(t.agent());
    try {
      await expect(agent.peer.request('ping', {})).rejects.toMatchObject({ code: 'not_ready' });
    } finally {
      await agent.close();
    }
  });

  test('an agent that sends no hello in time is dropped', async () => {
    const agent = await connectAgent(t.agent());
    const started = Date.now();
    await agent.closed;
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    expect(logsWith(t, 'dropping agent connection').some((l) => l.reason === 'no hello in time')).toBe(true);
  });

  test('an agent that logs in but never opens the control channel is dropped too', async () => {
    const link = await openSsh(t.agent());
    const before = logsWith(t, 'dropping agent connection').length;
    await link.closed;
    expect(logsWith(t, 'dropping agent connection').slice(before)).toEqual([
      expect.objectContaining({ reason: 'no hello in time' }),
    ]);
  });

  test('an invalid hello is answered invalid_payload and does not register a client', async () => {
    const agent = await connectAgent(t.agent());
    try {
      const bad = { ...makeHello({ client_id: 'bad' }), tags: 'not-a-list' };
      await expect(agent.peer.request('hello', bad as never)).rejects.toMatchObject({
        code: 'invalid_payload',
      });
      expect(await clientRecord(t, 'bad')).toBeUndefined();
    } finally {
      await agent.close();
    }
  });

  test('an upgrade without the svc-v1 subprotocol is refused with 400', async () => {
    const none = await rawRequest(t.server.clientPort, upgrade());
    expect(none.status).toBe(400);
    expect(JSON.parse(none.body).errors[0]).toMatchObject({
      code: 'ERR_AGENT_PROTOCOL',
      title: 'Request the WebSocket subprotocol svc-v1',
    });
    const newer = await rawRequest(t.server.clientPort, upgrade('svc-v2'));
    expect(newer.status).toBe(400);
    expect(JSON.parse(newer.body).errors[0].title).toBe(
      'Unsupported agent protocol svc-v2; this server speaks svc-v1',
    );
    const accepted = await rawRequest(t.server.clientPort, upgrade('svc-v2, svc-v1'));
    expect(accepted.status).toBe(101);
    expect(accepted.headers['sec-websocket-protocol']).toBe('svc-v1');
  });

  test('plain HTTP requests get a JSON 426', async () => {
    const res = await rawRequest(t.server.clientPort, {});
    expect(res.status).toBe(426);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(res.body).errors[0].code).toBe('ERR_UPGRADE_REQUIRED');
  });

  test('a WebSocket client asking for another protocol cannot connect', async () => {
    const ws = new WebSocket(t.url, 'svc-v9');
    const status = await new Promise<number>((resolve) =>
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)),
    );
    expect(status).toBe(400);
  });
});
