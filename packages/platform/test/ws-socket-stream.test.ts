import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { Duplex } from 'node:stream';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { WebSocket } from 'ws';
import { connectWebSocket, WebSocketProtocolError, type WebSocketStream } from '@svc/platform';
import { countWrites } from './support/count-writes.js';
import {
  clientFrame,
  closePeers,
  PROTOCOL,
  rawServer,
  readBytes,
  streamServer,
  wsServer,
} from './support/ws-peers.js';

afterEach(closePeers);

const sha256 = (data: Buffer | Buffer[]) => {
  const hash = createHash('sha256');
  for (const part of Array.isArray(data) ? data : [data]) hash.update(part);
  return hash.digest('hex');
};

/** `total` random bytes in pieces of random size up to `max`. */
function randomPieces(total: number, max: number): Buffer[] {
  const pieces: Buffer[] = [];
  for (let left = total; left > 0;) {
    const size = Math.min(left, 1 + Math.floor(Math.random() * max));
    pieces.push(randomBytes(size));
    left -= size;
  }
  return pieces;
}

const connect = (url: string) => connectWebSocket(url, { protocol: PROTOCOL, timeoutMs: 10_000 });

/** A ws client (the independent implementation) connected to `url`. */
async function wsClient(url: string): Promise<WebSocket> {
  const ws = new WebSocket(url, PROTOCOL, { perMessageDeflate: false });
  await once(ws, 'open');
  return ws;
}

/** Collects the binary messages a ws peer receives until `length` bytes came. */
function wsReceive(ws: WebSocket, length: number): Promise<Buffer[]> {
  const parts: Buffer[] = [];
  let got = 0;
  return new Promise((resolve) => {
    ws.on('message', (data: Buffer) => {
      parts.push(data);
      got += data.length;
      if (got >= length) resolve(parts);
    });
  });
}

describe('against ws, both roles and both directions', () => {
  test('our client to a ws server: 24 MiB of random writes arrive intact each way', async () => {
    const server = await wsServer();
    const stream = await connect(server.url);
    const peer = await server.connection();
    const up = randomPieces(24 * 1024 * 1024, 40_000);
    const upHash = sha256(up);
    const received = wsReceive(peer, 24 * 1024 * 1024);
    // Copies: the client masks in place.
    for (const piece of up) stream.write(Buffer.from(piece));
    expect(sha256(await received)).toBe(upHash);

    // ws sends some messages fragmented (fin: false, then continuation frames).
    const down = randomPieces(24 * 1024 * 1024, 100_000);
    const reading = readBytes(stream, 24 * 1024 * 1024);
    for (const [i, piece] of down.entries()) {
      if (i % 3 === 0 && piece.length > 10) {
        peer.send(piece.subarray(0, 7), { fin: false });
        peer.send(piece.subarray(7), { fin: true });
      } else peer.send(piece);
    }
    expect(sha256(await reading)).toBe(sha256(down));
    stream.destroy();
  });

  test('a ws client to our server: 24 MiB of random writes arrive intact each way', async () => {
    const server = await streamServer();
    const ws = await wsClient(server.url);
    expect(ws.protocol).toBe(PROTOCOL);
    const stream = await server.stream();
    const up = randomPieces(24 * 1024 * 1024, 100_000);
    const reading = readBytes(stream, 24 * 1024 * 1024);
    for (const [i, piece] of up.entries()) {
      if (i % 3 === 0 && piece.length > 10) {
        ws.send(piece.subarray(0, 7), { fin: false });
        ws.send(piece.subarray(7), { fin: true });
      } else ws.send(piece);
    }
    expect(sha256(await reading)).toBe(sha256(up));

    const down = randomPieces(24 * 1024 * 1024, 40_000);
    const received = wsReceive(ws, 24 * 1024 * 1024);
    for (const piece of down) stream.write(piece);
    expect(sha256(await received)).toBe(sha256(down));
    ws.terminate();
  });

  test("ws's pings are answered with pongs carrying their data, by either role", async () => {
    const server = await wsServer();
    const stream = await connect(server.url);
    const peer = await server.connection();
    const pong = once(peer, 'pong');
    peer.ping(Buffer.from('are you there'));
    expect(((await pong)[0] as Buffer).toString()).toBe('are you there');

    const ours = await streamServer();
    const ws = await wsClient(ours.url);
    await ours.stream();
    const wsPong = once(ws, 'pong');
    ws.ping(Buffer.from('and you'));
    expect(((await wsPong)[0] as Buffer).toString()).toBe('and you');
    stream.destroy();
    ws.terminate();
  });

  test('a close from the peer is answered with its code and ends the stream; ending ours sends 1000', async () => {
    const server = await wsServer();
    const stream = await connect(server.url);
    stream.resume();
    const peer = await server.connection();
    const peerClosed = once(peer, 'close');
    const ended = once(stream, 'end');
    const streamClosed = once(stream, 'close');
    peer.close(4001, 'bye');
    await ended;
    await streamClosed;
    // ws reports the code of the close frame that answered its own.
    expect((await peerClosed)[0]).toBe(4001);

    const ours = await streamServer();
    const ws = await wsClient(ours.url);
    const serverStream = await ours.stream();
    serverStream.resume();
    const wsClosed = once(ws, 'close');
    const serverClosed = once(serverStream, 'close');
    serverStream.end();
    expect((await wsClosed)[0]).toBe(1000);
    await serverClosed;
  });

  test('a text message is refused with 1003 and a clear error', async () => {
    const server = await wsServer();
    const stream = await connect(server.url);
    const peer = await server.connection();
    const peerClosed = once(peer, 'close');
    const failed = once(stream, 'error');
    peer.send('some text');
    const [error] = (await failed) as [WebSocketProtocolError];
    expect(error).toBeInstanceOf(WebSocketProtocolError);
    expect(error.code).toBe(1003);
    expect(error.message).toMatch(/text frame: this WebSocket carries binary data only/);
    expect((await peerClosed)[0]).toBe(1003);
  });

  test('a message over the server limit is refused with 1009', async () => {
    const ours = await streamServer({ maxMessageBytes: 64 * 1024 });
    const ws = await wsClient(ours.url);
    const stream = await ours.stream();
    const wsClosed = once(ws, 'close');
    const failed = new Promise<Error>((resolve) => stream.once('error', resolve));
    ws.send(Buffer.alloc(64 * 1024));
    ws.send(Buffer.alloc(64 * 1024 + 1));
    expect((await failed).message).toMatch(/message of 65537 bytes or more \(limit 65536\)/);
    expect((await wsClosed)[0]).toBe(1009);
  });
});

describe('protocol errors from a raw peer', () => {
  test('an unmasked frame to the server closes with 1002 and destroys the stream', async () => {
    const ours = await streamServer();
    const { createConnection } = await import('node:net');
    const url = new URL(ours.url);
    const socket = createConnection(Number(url.port), '127.0.0.1');
    socket.write(
      'GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n' +
        `Sec-WebSocket-Protocol: ${PROTOCOL}\r\n\r\n`,
    );
    const stream = await ours.stream();
    const failed = new Promise<Error>((resolve) => stream.once('error', resolve));
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.write(clientFrame(0x2, Buffer.from('plain'), { mask: false }));
    expect((await failed).message).toMatch(/unmasked frame from a client \(closed with 1002\)/);
    await once(socket, 'end');
    const wire = Buffer.concat(received);
    const close = wire.subarray(wire.indexOf('\r\n\r\n') + 4);
    // FIN + close, unmasked, then the status code.
    expect(close[0]).toBe(0x88);
    expect(close.readUInt16BE(2)).toBe(1002);
    socket.destroy();
  });

  test('a masked frame (or RSV bits) to the client closes with 1002, the close frame masked', async () => {
    const peerSaw: Buffer[] = [];
    const server = await rawServer((socket) => {
      socket.once('data', (request: Buffer) => {
        const key = /Sec-WebSocket-Key: (.*)\r\n/.exec(request.toString())?.[1] ?? '';
        const accept = createHash('sha1')
          .update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
          .digest('base64');
        socket.write(
          'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
            `Sec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: ${PROTOCOL}\r\n\r\n`,
        );
        socket.write(clientFrame(0x2, Buffer.from('masked by a server')));
        socket.on('data', (chunk: Buffer) => peerSaw.push(chunk));
      });
    });
    const stream = await connect(server.url);
    const [error] = (await once(stream, 'error')) as [Error];
    expect(error.message).toMatch(/masked frame from a server/);
    await vi.waitFor(() => expect(Buffer.concat(peerSaw).length).toBeGreaterThanOrEqual(8));
    const close = Buffer.concat(peerSaw);
    expect(close[0]).toBe(0x88);
    // Masked, 2 + reason bytes; unmasking the code with the key gives 1002.
    expect((close[1] as number) & 0x80).toBe(0x80);
    const key = close.subarray(2, 6);
    const code = Buffer.from([
      (close[6] as number) ^ (key[0] as number),
      (close[7] as number) ^ (key[1] as number),
    ]);
    expect(code.readUInt16BE(0)).toBe(1002);
  });
});

describe('writes', () => {
  async function pair(): Promise<{ client: WebSocketStream; server: Duplex; raw: Buffer[] }> {
    const peer = await wsServer();
    const client = await connect(peer.url);
    const ws = await peer.connection();
    // The server side as a byte stream: ws's messages concatenated.
    const { PassThrough } = await import('node:stream');
    const server = new PassThrough();
    ws.on('message', (data: Buffer) => server.write(data));
    return { client, server, raw: peer.raw };
  }

  test('packets written within one turn of the event loop leave together, 512 KiB per socket write', async () => {
    const { client, server } = await pair();
    const writes = countWrites(client.socket);
    const packets = Array.from({ length: 50 }, () => randomBytes(32 * 1024));
    const expected = Buffer.concat(packets);
    const up = readBytes(server, expected.length);
    for (const packet of packets) client.write(packet);
    expect((await up).equals(expected)).toBe(true);
    // 50 packets of 32 KiB: three writes of 16 packets, then the last 2 at the end of the turn.
    expect(writes.count).toBe(4);
  });

  test("a server's 101 leaves with the frames written in the turn it opened, in one socket write", async () => {
    const counts: { readonly count: number }[] = [];
    const peer = await streamServer({
      onOpen: (stream) => {
        counts.push(countWrites(stream.socket));
        stream.write(Buffer.from('first words'));
      },
    });
    // ws, the independent implementation, reads the answer and the frame from one segment (the message comes
    // in the same turn as 'open': listened to before).
    const ws = new WebSocket(peer.url, PROTOCOL, { perMessageDeflate: false });
    const received = wsReceive(ws, 11);
    expect(Buffer.concat(await received).toString()).toBe('first words');
    expect(counts.map((c) => c.count)).toEqual([1]);
    ws.terminate();
    // A server that writes nothing in that turn answers all the same.
    const quiet = await streamServer();
    const client = await connect(quiet.url);
    const server = await quiet.stream();
    const down = readBytes(client, 4);
    server.write(Buffer.from('late'));
    expect((await down).toString()).toBe('late');
    client.destroy();
  });

  test('client frames are masked as RFC 6455 requires (the payload is not visible on the wire)', async () => {
    const { client, server, raw } = await pair();
    const marker = Buffer.from('svc-mask-marker-'.repeat(64));
    const received = readBytes(server, marker.length * 3);
    for (let i = 0; i < 3; i++) client.write(Buffer.from(marker));
    expect((await received).equals(Buffer.concat([marker, marker, marker]))).toBe(true);
    expect(Buffer.concat(raw).indexOf(marker.subarray(0, 32))).toBe(-1);
  });

  test('every frame gets a fresh masking key', async () => {
    const { client, server, raw } = await pair();
    const received = readBytes(server, 4 * 32 * 1024);
    for (let i = 0; i < 4; i++) client.write(Buffer.alloc(32 * 1024));
    await received;
    // Zero payloads: each frame's masked payload is its key repeated; 4 distinct keys.
    const wire = Buffer.concat(raw);
    const keys = new Set<string>();
    for (let at = 0; at < wire.length; at += 8 + 32 * 1024) {
      expect(wire[at]).toBe(0x82);
      keys.add(wire.subarray(at + 4, at + 8).toString('hex'));
    }
    expect(keys.size).toBe(4);
  });

  test('small chunks of one turn share a masked frame, whatever their offsets in it', async () => {
    const { client, server, raw } = await pair();
    const chunks = [randomBytes(3), randomBytes(5), randomBytes(7), randomBytes(20 * 1024)];
    const expected = Buffer.concat(chunks);
    const received = readBytes(server, expected.length);
    for (const chunk of chunks) client.write(Buffer.from(chunk));
    expect((await received).equals(expected)).toBe(true);
    const wire = Buffer.concat(raw);
    // FIN + binary, masked, 16-bit length, key: one frame for all four chunks.
    expect(wire[wire.length - expected.length - 8]).toBe(0x82);
    expect(wire[wire.length - expected.length - 7]).toBe(0x80 | 126);
    expect(wire.readUInt16BE(wire.length - expected.length - 6)).toBe(expected.length);
  });

  test('small chunks are sent from a copy: one Buffer written twice arrives twice, and is left as it was', async () => {
    const { client, server } = await pair();
    const line = Buffer.from('SSH-2.0-shared-constant\r\n');
    const before = Buffer.from(line);
    const received = readBytes(server, line.length * 2);
    client.write(line);
    client.write(line);
    expect((await received).equals(Buffer.concat([before, before]))).toBe(true);
    expect(line.equals(before)).toBe(true);
  });
});

test('a reader that does not read pauses the socket above 1 MiB, and gets everything once it reads', async () => {
  const server = await wsServer();
  const stream = await connect(server.url);
  const peer = await server.connection();
  const sent = randomBytes(16 * 1024 * 1024);
  for (let at = 0; at < sent.length; at += 32 * 1024) peer.send(sent.subarray(at, at + 32 * 1024));
  await vi.waitFor(() => expect(stream.readableLength).toBeGreaterThanOrEqual(1024 * 1024));
  expect(stream.socket.isPaused()).toBe(true);
  expect(stream.readableLength).toBeLessThan(2 * 1024 * 1024);
  expect(peer.bufferedAmount).toBeGreaterThan(0);
  expect((await readBytes(stream, sent.length)).equals(sent)).toBe(true);
  stream.destroy();
});

test('a peer that vanishes (socket cut, no close frame) closes the stream at once', async () => {
  const server = await wsServer();
  const stream = await connect(server.url);
  stream.resume();
  const peer = await server.connection();
  const closed = once(stream, 'close');
  peer.terminate();
  await closed;
});

describe('holding inbound data back', () => {
  test('held data is kept until released, then read in order', async () => {
    const server = await streamServer();
    const ws = await wsClient(server.url);
    const stream = await server.stream();
    const received: string[] = [];
    stream.on('data', (chunk: Buffer) => received.push(chunk.toString()));
    ws.send(Buffer.from('one'));
    await vi.waitFor(() => expect(received).toEqual(['one']));

    let told = 0;
    stream.holdInbound(() => (told += 1));
    ws.send(Buffer.from('two'));
    ws.send(Buffer.from('three'));
    await vi.waitFor(() => expect(told).toBe(1));
    // Kept, not read: nothing more arrives while held.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(received).toEqual(['one']);
    expect(told).toBe(1);

    stream.releaseInbound();
    ws.send(Buffer.from('four'));
    await vi.waitFor(() => expect(received).toEqual(['one', 'two', 'three', 'four']));
    ws.terminate();
  });

  test('a peer that goes away while data is held: the stream closes, the data is dropped', async () => {
    const server = await streamServer();
    const ws = await wsClient(server.url);
    const stream = await server.stream();
    const received: string[] = [];
    stream.on('data', (chunk: Buffer) => received.push(chunk.toString()));
    let held = false;
    stream.holdInbound(() => (held = true));
    ws.send(Buffer.from('last words'));
    await vi.waitFor(() => expect(held).toBe(true));
    const closed = once(stream, 'close');
    ws.terminate();
    await closed;
    stream.releaseInbound();
    expect(received).toEqual([]);
  });
});
