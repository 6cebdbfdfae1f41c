import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { WriteBatcher } from '../src/write-batcher.js';
import { countWrites } from './support/count-writes.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** A client socket on 127.0.0.1 whose syscall-level writes (`_write`/`_writev` calls) are counted. */
async function countedSocket(): Promise<{
  socket: Socket;
  writes: () => number;
  received: () => number;
  arrivals: EventTarget;
}> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  let received = 0;
  const arrivals = new EventTarget();
  server.on('connection', (peer: Socket) =>
    peer.on('data', (chunk: Buffer) => {
      received += chunk.length;
      arrivals.dispatchEvent(new Event('data'));
    }),
  );
  const socket = connect({ port: (server.address() as AddressInfo).port, host: '127.0.0.1' });
  await once(socket, 'connect');
  cleanups.push(() => {
    socket.destroy();
    server.close();
  });
  const writes = countWrites(socket);
  return { socket, writes: () => writes.count, received: () => received, arrivals };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('WriteBatcher', () => {
  test('writes of one turn leave together at the end of the turn', async () => {
    const { socket, writes } = await countedSocket();
    const batch = new WriteBatcher(1024 * 1024);
    for (let i = 0; i < 10; i++) batch.add(socket, 1000, () => socket.write(Buffer.alloc(1000)));
    expect(writes()).toBe(0);
    await nextTurn();
    expect(writes()).toBe(1);
  });

  test('a batch leaves as soon as maxBytes are waiting, before the turn ends', async () => {
    const { socket, writes } = await countedSocket();
    const batch = new WriteBatcher(4000);
    for (let i = 0; i < 10; i++) batch.add(socket, 1000, () => socket.write(Buffer.alloc(1000)));
    expect(writes()).toBe(2);
    await nextTurn();
    expect(writes()).toBe(3);
  });

  test('every byte arrives, in separate turns too', async () => {
    const { socket, received, arrivals } = await countedSocket();
    const batch = new WriteBatcher(64 * 1024);
    for (let turn = 0; turn < 5; turn++) {
      for (let i = 0; i < 20; i++) batch.add(socket, 10_000, () => socket.write(Buffer.alloc(10_000)));
      await nextTurn();
    }
    while (received() < 5 * 20 * 10_000) await once(arrivals, 'data');
    expect(received()).toBe(1_000_000);
  });
});
