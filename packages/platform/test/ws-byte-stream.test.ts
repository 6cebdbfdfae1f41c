import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterEach, describe, expect, test } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { webSocketByteStream } from '@svc/platform';
import { countWrites } from './support/count-writes.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A ws server and client on 127.0.0.1; `raw` collects the bytes the server's socket receives. */
async function pair() {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  await once(wss, 'listening');
  const raw: Buffer[] = [];
  const serverSide = new Promise<Duplex>((resolve) =>
    wss.once('connection', (ws, req) => {
      // Ahead of ws's own listener, which unmasks frames in place.
      req.socket.prependListener('data', (chunk: Buffer) => raw.push(Buffer.from(chunk)));
      resolve(webSocketByteStream(ws));
    }),
  );
  const { port } = wss.address() as AddressInfo;
  const client = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: false });
  await once(client, 'open');
  const clientStream = webSocketByteStream(client);
  const serverStream = await serverSide;
  cleanups.push(() => {
    client.terminate();
    return new Promise<void>((resolve) => wss.close(() => resolve()));
  });
  return { client, clientStream, serverStream, raw };
}

/** Reads `length` bytes from the stream, leaving it open. */
function readBytes(stream: Duplex, length: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let got = 0;
  return new Promise((resolve) => {
    const onData = (chunk: Buffer) => {
      parts.push(chunk);
      got += chunk.length;
      if (got < length) return;
      stream.off('data', onData);
      resolve(Buffer.concat(parts));
    };
    stream.on('data', onData);
  });
}

describe('webSocketByteStream', () => {
  test('many packets written at once arrive complete and in order, both ways', async () => {
    const { clientStream, serverStream } = await pair();
    // 600 writes of 32 KiB without waiting: most of them queue behind the first and leave batched.
    const packets = Array.from({ length: 600 }, () => randomBytes(32 * 1024));
    const expected = Buffer.concat(packets);
    const up = readBytes(serverStream, expected.length);
    // The client masks what it sends in place: it gets copies.
    for (const packet of packets) clientStream.write(Buffer.from(packet));
    expect((await up).equals(expected)).toBe(true);
    const down = readBytes(clientStream, expected.length);
    for (const packet of packets) serverStream.write(packet);
    expect((await down).equals(expected)).toBe(true);
  });

  test('packets written within one turn of the event loop leave together, 512 KiB per socket write', async () => {
    const { client, clientStream, serverStream } = await pair();
    const writes = countWrites((client as unknown as { _socket: Socket })._socket);
    const packets = Array.from({ length: 50 }, () => randomBytes(32 * 1024));
    const expected = Buffer.concat(packets);
    const up = readBytes(serverStream, expected.length);
    for (const packet of packets) clientStream.write(packet);
    expect((await up).equals(expected)).toBe(true);
    // 50 packets of 32 KiB: three writes of 16 packets, then the last 2 at the end of the turn.
    expect(writes.count).toBe(4);
  });

  test('batched client frames stay masked as RFC 6455 requires (the payload is not visible on the wire)', async () => {
    const { clientStream, serverStream, raw } = await pair();
    const marker = Buffer.from('svc-mask-marker-'.repeat(64));
    const received = readBytes(serverStream, marker.length * 3);
    for (let i = 0; i < 3; i++) clientStream.write(Buffer.from(marker));
    expect((await received).equals(Buffer.concat([marker, marker, marker]))).toBe(true);
    expect(Buffer.concat(raw).indexOf(marker.subarray(0, 32))).toBe(-1);
  });

  test('small chunks of one turn share a masked frame, whatever their offsets in it', async () => {
    const { clientStream, serverStream, raw } = await pair();
    // The chunks after the first start at offsets that are not a multiple of the 4-byte key.
    const chunks = [randomBytes(3), randomBytes(5), randomBytes(7), randomBytes(20 * 1024)];
    const expected = Buffer.concat(chunks);
    const received = readBytes(serverStream, expected.length);
    for (const chunk of chunks) clientStream.write(Buffer.from(chunk));
    expect((await received).equals(expected)).toBe(true);
    const wire = Buffer.concat(raw);
    // FIN + binary, masked, 16-bit length, key: one frame for all four chunks.
    expect(wire[wire.length - expected.length - 8]).toBe(0x82);
    expect(wire[wire.length - expected.length - 7]).toBe(0x80 | 126);
    expect(wire.readUInt16BE(wire.length - expected.length - 6)).toBe(expected.length);
  });

  test('small chunks are sent from a copy: one Buffer written twice arrives twice, and is left as it was', async () => {
    const { clientStream, serverStream } = await pair();
    const line = Buffer.from('SSH-2.0-shared-constant\r\n');
    const before = Buffer.from(line);
    const received = readBytes(serverStream, line.length * 2);
    clientStream.write(line);
    clientStream.write(line);
    expect((await received).equals(Buffer.concat([before, before]))).toBe(true);
    expect(line.equals(before)).toBe(true);
  });
});
