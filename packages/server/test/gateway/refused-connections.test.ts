import { afterEach, describe, expect, test } from 'vitest';
import { connectClient } from '../../../../test-support/agent-client.js';
import { openRaw, parseResponse, rawRequest } from '../../../../test-support/raw-http.js';
import { logsWith, startGatewayServer, type GatewayServer } from './helpers.js';

const upgrade = (headers: string) =>
  'GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
  `Sec-WebSocket-Version: 13\r\n${headers}\r\n`;
const KEY = 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';
/** What an OpenRPort agent asks for. */
const OPENRPORT_UPGRADE = upgrade(`${KEY}Sec-WebSocket-Protocol: rport-v1\r\n`);

const refusalsOf = (t: GatewayServer, ip: string) =>
  logsWith(t, 'agent connection refused').filter((line) => line.ip === ip);

describe('refused agent connections are answered and logged once per address and minute', () => {
  let t: GatewayServer | undefined;
  afterEach(async () => {
    await t?.stop();
    t = undefined;
  });

  test('a wrong subprotocol: each attempt gets 400, one warning per address says why', async () => {
    t = await startGatewayServer();
    const port = t.server.clientPort;
    for (let attempt = 0; attempt < 3; attempt++) {
      const res = await rawRequest(port, OPENRPORT_UPGRADE);
      expect(res.status).toBe(400);
      expect(res.json.errors[0]).toMatchObject({
        code: 'ERR_AGENT_PROTOCOL',
        title: 'Request the WebSocket subprotocol svc-v1',
      });
    }
    const lines = refusalsOf(t, '127.0.0.1');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 40,
      status: 400,
      code: 'ERR_AGENT_PROTOCOL',
      reason: 'Request the WebSocket subprotocol svc-v1',
      refused_before: 0,
    });

    // Another address is reported on its own.
    const other = await rawRequest(port, OPENRPORT_UPGRADE, { localAddress: '127.0.0.2' });
    expect(other.status).toBe(400);
    expect(refusalsOf(t, '127.0.0.2')).toHaveLength(1);
    expect(refusalsOf(t, '127.0.0.1')).toHaveLength(1);
  });

  test('not a WebSocket, a malformed upgrade and a slow upgrade are answered in our shape and logged', async () => {
    t = await startGatewayServer({ server: { upgrade_timeout: '500ms' } });
    const port = t.server.clientPort;

    const plain = await rawRequest(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', {
      localAddress: '127.0.0.3',
    });
    expect(plain.status).toBe(426);
    expect(refusalsOf(t, '127.0.0.3')).toMatchObject([
      { level: 30, status: 426, code: 'ERR_UPGRADE_REQUIRED' },
    ]);

    const badKey = await rawRequest(
      port,
      upgrade('Sec-WebSocket-Key: short\r\nSec-WebSocket-Protocol: svc-v1\r\n'),
      {
        localAddress: '127.0.0.4',
      },
    );
    expect(badKey.status).toBe(400);
    expect(badKey.json.errors[0]).toMatchObject({
      code: 'ERR_MALFORMED_HTTP',
      title: 'Invalid WebSocket upgrade: Missing or invalid Sec-WebSocket-Key header',
    });
    expect(refusalsOf(t, '127.0.0.4')).toMatchObject([{ status: 400, code: 'ERR_MALFORMED_HTTP' }]);

    const slow = await openRaw(port, 'GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n', {
      localAddress: '127.0.0.5',
      closeWithinMs: 5000,
    });
    const { received, closedAt } = await slow.closed;
    expect(closedAt - slow.openedAt).toBeGreaterThanOrEqual(400);
    const answer = parseResponse(received);
    expect(answer.status).toBe(408);
    expect(answer.json.errors[0]).toMatchObject({
      code: 'ERR_REQUEST_TIMEOUT',
      detail: 'send the WebSocket upgrade request within 500ms ([server] upgrade_timeout)',
    });
    expect(refusalsOf(t, '127.0.0.5')).toMatchObject([{ status: 408, code: 'ERR_REQUEST_TIMEOUT' }]);
  });
});

describe('the agent listener limits', () => {
  let t: GatewayServer | undefined;
  afterEach(async () => {
    await t?.stop();
    t = undefined;
  });

  test('a connected agent outlives upgrade_timeout: only the upgrade request is timed', async () => {
    t = await startGatewayServer({ server: { upgrade_timeout: '300ms' } });
    const agent = await connectClient(t.agent(), { client_id: 'long-lived' });
    try {
      const closed = new Promise((resolve) => agent.ws.once('close', () => resolve('closed')));
      const outlived = new Promise((resolve) => setTimeout(() => resolve('open'), 1500));
      expect(await Promise.race([closed, outlived])).toBe('open');
      await expect(agent.peer.request('ping', {})).resolves.toEqual({});
    } finally {
      await agent.close();
    }
  });

  test('beyond max_connections a connection is closed unanswered; agents connect again once there is room', async () => {
    t = await startGatewayServer({ server: { max_connections: 2, upgrade_timeout: '1s' } });
    const server = t;
    const agent = await connectClient(server.agent(), { client_id: 'first' });
    try {
      const silent = await openRaw(server.server.clientPort, '');
      const extra = await openRaw(server.server.clientPort, OPENRPORT_UPGRADE, { closeWithinMs: 500 });
      expect((await extra.closed).received).toBe('');
      expect(logsWith(server, 'agent connection refused: [server] max_connections are open')).toMatchObject([
        { max_connections: 2, refused_before: 0 },
      ]);
      // The silent connection times out, which makes room.
      expect(parseResponse((await silent.closed).received).status).toBe(408);
      const second = await connectClient(server.agent(), { client_id: 'second' });
      await second.close();
    } finally {
      await agent.close();
    }
  });
});
