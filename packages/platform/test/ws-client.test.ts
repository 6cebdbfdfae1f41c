import { createHash } from 'node:crypto';
import type { Socket } from 'node:net';
import { afterEach, expect, test } from 'vitest';
import { connectWebSocket, WebSocketHandshakeError } from '@svc/platform';
import { clientFrame, closePeers, PROTOCOL, rawServer, readBytes, wsServer } from './support/ws-peers.js';

afterEach(closePeers);

const accept = (key: string) =>
  createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');

/** A server answering the upgrade request with `answer(key, request)`, written in one piece. */
function answering(answer: (key: string, request: string) => string | Buffer) {
  return rawServer((socket: Socket) => {
    let request = '';
    socket.on('data', (chunk: Buffer) => {
      request += chunk.toString('latin1');
      if (!request.includes('\r\n\r\n')) return;
      socket.write(answer(/Sec-WebSocket-Key: (.*)\r\n/.exec(request)?.[1] ?? '', request));
    });
  });
}

const upgraded = (key: string, extra = `Sec-WebSocket-Protocol: ${PROTOCOL}\r\n`) =>
  'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
  `Sec-WebSocket-Accept: ${accept(key)}\r\n${extra}\r\n`;

async function failure(url: string, timeoutMs = 10_000): Promise<WebSocketHandshakeError> {
  const error: unknown = await connectWebSocket(url, { protocol: PROTOCOL, timeoutMs }).then(
    (stream) => {
      stream.destroy();
      throw new Error('the handshake was expected to fail');
    },
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(WebSocketHandshakeError);
  return error as WebSocketHandshakeError;
}

test('the request is a WebSocket upgrade asking for the subprotocol, and ws accepts it', async () => {
  let seen = '';
  const raw = await answering((key, request) => {
    seen = request;
    return upgraded(key);
  });
  const stream = await connectWebSocket(raw.url, { protocol: PROTOCOL, timeoutMs: 10_000 });
  stream.destroy();
  expect(seen).toMatch(/^GET \/agent HTTP\/1\.1\r\n/);
  expect(seen).toContain(`Host: 127.0.0.1:${raw.port}\r\n`);
  expect(seen).toMatch(/Upgrade: websocket\r\nConnection: Upgrade\r\n/);
  expect(seen).toMatch(/Sec-WebSocket-Key: [+/0-9A-Za-z]{22}==\r\nSec-WebSocket-Version: 13\r\n/);
  expect(seen).toContain(`Sec-WebSocket-Protocol: ${PROTOCOL}\r\n`);

  const ws = await wsServer();
  const accepted = await connectWebSocket(ws.url, { protocol: PROTOCOL, timeoutMs: 10_000 });
  expect((await ws.connection()).protocol).toBe(PROTOCOL);
  accepted.destroy();
});

test('frame bytes in the same read as the 101 head are not lost', async () => {
  const raw = await answering((key) =>
    Buffer.concat([
      Buffer.from(upgraded(key)),
      clientFrame(0x2, Buffer.from('first bytes'), { mask: false }),
    ]),
  );
  const stream = await connectWebSocket(raw.url, { protocol: PROTOCOL, timeoutMs: 10_000 });
  expect((await readBytes(stream, 11)).toString()).toBe('first bytes');
  stream.destroy();
});

test('interim answers are skipped, each restarting the deadline; one in the same read as the 101 too', async () => {
  let request = '';
  const raw = await rawServer((socket: Socket) => {
    socket.once('data', (chunk: Buffer) => {
      request = chunk.toString('latin1');
      const key = /Sec-WebSocket-Key: (.*)\r\n/.exec(request)?.[1] ?? '';
      const waiting = (ahead: number) => `HTTP/1.1 102 Processing\r\nsvc-waiting-ahead: ${ahead}\r\n\r\n`;
      // Four words 150 ms apart, then the last one, the 101 and a frame together: 600 ms against a 300 ms deadline.
      const say = (ahead: number) => {
        if (ahead > 0) {
          socket.write(waiting(ahead));
          setTimeout(() => say(ahead - 1), 150);
          return;
        }
        socket.write(
          Buffer.concat([Buffer.from(waiting(0) + upgraded(key)), Buffer.from([0x82, 2, 0x68, 0x69])]),
        );
      };
      say(4);
    });
  });
  const interims: [number, string | undefined][] = [];
  const stream = await connectWebSocket(raw.url, {
    protocol: PROTOCOL,
    timeoutMs: 300,
    headers: { 'svc-wait': '1' },
    onInterim: (status, headers) => interims.push([status, headers.get('svc-waiting-ahead')]),
  });
  expect((await readBytes(stream, 2)).toString()).toBe('hi');
  expect(interims).toEqual([4, 3, 2, 1, 0].map((ahead) => [102, String(ahead)]));
  expect(request).toContain('\r\nsvc-wait: 1\r\n');
  stream.destroy();
});

test('a refusal names the status and keeps the body', async () => {
  const body =
    '{"errors":[{"code":"ERR_AGENT_PROTOCOL","title":"Request the WebSocket subprotocol svc-v1"}]}';
  const raw = await answering(
    () =>
      `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
  );
  const error = await failure(raw.url);
  expect(error.message).toBe('Unexpected server response: 400 Bad Request');
  expect(error.details).toMatchObject({ status: 400, body });
});

test('a refusal with Retry-After in seconds carries it in ms; an HTTP date is not taken', async () => {
  const busy = await answering(
    () => 'HTTP/1.1 503 Service Unavailable\r\nretry-after: 7\r\ncontent-length: 0\r\n\r\n',
  );
  expect((await failure(busy.url)).details).toMatchObject({ status: 503, retryAfterMs: 7000 });
  const dated = await answering(
    () =>
      'HTTP/1.1 503 Service Unavailable\r\nretry-after: Wed, 21 Oct 2026 07:28:00 GMT\r\ncontent-length: 0\r\n\r\n',
  );
  expect((await failure(dated.url)).details.retryAfterMs).toBeUndefined();
});

test('a refusal without a length is reported when the server closes', async () => {
  const raw = await rawServer((socket) =>
    socket.once('data', () => socket.end('HTTP/1.1 401 Unauthorized\r\nconnection: close\r\n\r\nno entry')),
  );
  const error = await failure(raw.url);
  expect(error.message).toBe('Unexpected server response: 401 Unauthorized');
  expect(error.details.body).toBe('no entry');
});

test.each([
  ['a wrong Sec-WebSocket-Accept', () => upgraded('not-the-key'), /wrong Sec-WebSocket-Accept/],
  ['no subprotocol', (key: string) => upgraded(key, ''), /did not choose the subprotocol svc-v1/],
  [
    'another subprotocol',
    (key: string) => upgraded(key, 'Sec-WebSocket-Protocol: svc-v2\r\n'),
    /chose the subprotocol svc-v2, not svc-v1/,
  ],
  [
    'an extension not offered',
    (key: string) => upgraded(key, `Sec-WebSocket-Protocol: ${PROTOCOL}\r\nSec-WebSocket-Extensions: x\r\n`),
    /extensions that were not offered/,
  ],
  [
    'no Upgrade header',
    (key: string) => upgraded(key).replace('Upgrade: websocket\r\n', ''),
    /no "Upgrade: websocket"/,
  ],
  ['not HTTP', () => 'SSH-2.0-OpenSSH_9.6\r\n\r\n', /did not answer with HTTP/],
])('%s fails the handshake', async (_name, answer, message) => {
  const raw = await answering(answer);
  expect((await failure(raw.url)).message).toMatch(message);
});

test('a server that closes without answering: ECONNRESET, "socket hang up"', async () => {
  const raw = await rawServer((socket) => socket.once('data', () => socket.end()));
  const error = await failure(raw.url);
  expect(error.code).toBe('ECONNRESET');
  expect(error.message).toMatch(/closed the connection before answering the upgrade \(socket hang up\)/);
});

test('a server that never answers: the handshake times out', async () => {
  const raw = await rawServer(() => undefined);
  const error = await failure(raw.url, 300);
  expect(error.code).toBe('ETIMEDOUT');
  expect(error.message).toBe('the opening handshake timed out after 300 ms');
});

test("network errors are the socket's own; an abort ends the attempt", async () => {
  const raw = await rawServer(() => undefined);
  await closePeers();
  const refused = await connectWebSocket(raw.url, { protocol: PROTOCOL, timeoutMs: 10_000 }).catch(
    (err: unknown) => err as Error & { code?: string },
  );
  expect(refused).toMatchObject({ code: 'ECONNREFUSED' });

  const silent = await rawServer(() => undefined);
  const abort = new AbortController();
  const attempt = connectWebSocket(silent.url, {
    protocol: PROTOCOL,
    timeoutMs: 10_000,
    signal: abort.signal,
  });
  abort.abort(new Error('stopping'));
  await expect(attempt).rejects.toThrow('stopping');
});

test('only ws:// and wss:// URLs are taken', async () => {
  await expect(
    connectWebSocket('http://127.0.0.1:1/', { protocol: PROTOCOL, timeoutMs: 1000 }),
  ).rejects.toThrow('http://127.0.0.1:1/ is not a ws:// or wss:// URL');
});

test('localAddress: the connection comes from that address (any 127.x on Linux loopback)', async () => {
  let from: string | undefined;
  const raw = await rawServer((socket) => {
    from = socket.remoteAddress;
    socket.once('data', (chunk: Buffer) => {
      const key = /Sec-WebSocket-Key: (.*)\r\n/.exec(chunk.toString('latin1'))?.[1] ?? '';
      socket.write(upgraded(key));
    });
  });
  const stream = await connectWebSocket(raw.url, {
    protocol: PROTOCOL,
    timeoutMs: 10_000,
    localAddress: '127.0.0.3',
  });
  stream.destroy();
  expect(from).toBe('127.0.0.3');
});
