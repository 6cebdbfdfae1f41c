import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { afterEach, describe, expect, test } from 'vitest';
import { SocketReadBuffer, splice } from '@svc/platform';
import { countWrites } from './support/count-writes.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** Stands in for an ssh2 channel: what the test pushes comes out of its readable side; eof/close are recorded. */
class TestChannel extends Duplex {
  readonly received: Buffer[] = [];
  eofSent = false;
  override _read(): void {}
  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.received.push(chunk);
    this.emit('received');
    callback();
  }
  eof(): void {
    this.eofSent = true;
  }
  close(): void {
    this.destroy();
  }
}

/** A connected TCP pair on 127.0.0.1: `local` is spliced to a channel, `peer` is the far end. */
async function splicedPair<C extends TestChannel = TestChannel>(
  channel: C = new TestChannel() as C,
  { pauseBeforeSplice = false, relayed = (_bytes: number) => {} } = {},
): Promise<{ local: Socket; peer: Socket; channel: C }> {
  const server = createServer({ allowHalfOpen: true });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const accepted = once(server, 'connection') as Promise<[Socket]>;
  const local = connect({
    port: (server.address() as AddressInfo).port,
    host: '127.0.0.1',
    allowHalfOpen: true,
  });
  const [peer] = await accepted;
  await once(local, 'connect');
  // svcd's tunnel listener accepts with pauseOnConnect, so its sockets arrive paused.
  if (pauseBeforeSplice) local.pause();
  splice(local, channel, undefined, relayed);
  cleanups.push(() => {
    local.destroy();
    peer.destroy();
    server.close();
  });
  return { local, peer, channel };
}

/** Reads from `socket` until `length` bytes arrived, leaving it open. */
function readExactly(socket: Socket, length: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let total = 0;
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      parts.push(chunk);
      total += chunk.length;
      if (total < length) return;
      socket.off('data', onData).off('error', reject);
      socket.pause();
      resolve(Buffer.concat(parts));
    };
    socket.on('data', onData).once('error', reject);
    socket.resume();
  });
}

describe('splice: channel to socket', () => {
  test('packets that arrive in one turn of the event loop leave in one socket write, in order', async () => {
    const { local, peer, channel } = await splicedPair();
    const writes = countWrites(local);
    const packets = Array.from({ length: 16 }, () => randomBytes(32 * 1024));
    for (const packet of packets) channel.push(packet);

    const arrived = await readExactly(peer, 16 * 32 * 1024);
    expect(arrived.equals(Buffer.concat(packets))).toBe(true);
    expect(writes.count).toBe(1);
  });

  test('a peer that does not read pauses the channel with at most ~1 MiB held in the socket, and loses nothing', async () => {
    const { local, peer, channel } = await splicedPair();
    peer.pause();
    const sent: Buffer[] = [];
    let pausedWhileSending = false;
    // Pushing far more than the socket buffers can hold: the channel must stop flowing before it is all written.
    for (let i = 0; i < 256; i++) {
      const packet = randomBytes(32 * 1024);
      sent.push(packet);
      channel.push(packet);
      await new Promise((resolve) => setImmediate(resolve));
      if (channel.isPaused()) {
        pausedWhileSending = true;
        expect(local.writableLength).toBeLessThanOrEqual(1024 * 1024 + 32 * 1024);
      }
    }
    expect(pausedWhileSending).toBe(true);

    peer.resume();
    const arrived = await readExactly(peer, 256 * 32 * 1024);
    expect(arrived.equals(Buffer.concat(sent))).toBe(true);
    expect(channel.isPaused()).toBe(false);
  });

  test('the end of the channel ends the socket after its data, and the peer can still answer', async () => {
    const { peer, channel } = await splicedPair();
    channel.push(Buffer.from('request'));
    channel.push(null);
    const request = await readExactly(peer, 'request'.length);
    expect(request.toString()).toBe('request');
    peer.resume();
    await once(peer, 'end');

    peer.end('reply');
    await once(channel, 'finish');
    expect(Buffer.concat(channel.received).toString()).toBe('reply');
    expect(channel.eofSent).toBe(true);
  });
});

/** A channel whose writes complete only when the SSH window is open (ssh2 holds the callback until then). */
class WindowedChannel extends TestChannel {
  private readonly held: (() => void)[] = [];
  windowOpen = false;
  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.received.push(chunk);
    this.emit('received');
    if (this.windowOpen) callback();
    else this.held.push(callback);
  }
  openWindow(): void {
    this.windowOpen = true;
    for (const callback of this.held.splice(0)) callback();
  }
}

const receivedBytes = (channel: TestChannel) =>
  channel.received.reduce((sum, chunk) => sum + chunk.length, 0);

/** Resolves once `condition` holds after one of the channel's writes. */
async function untilReceived(channel: TestChannel, condition: () => boolean): Promise<void> {
  while (!condition()) await once(channel, 'received');
}

describe('splice: socket to channel', () => {
  test('a socket that arrives paused starts flowing into the channel', async () => {
    const { peer, channel } = await splicedPair(new TestChannel(), { pauseBeforeSplice: true });
    peer.write('hello');
    await untilReceived(channel, () => receivedBytes(channel) >= 5);
    expect(Buffer.concat(channel.received).toString()).toBe('hello');
  });

  test('while the SSH window is shut the socket is paused with at most ~256 KiB waiting, and nothing is lost', async () => {
    const { local, peer, channel } = await splicedPair(new WindowedChannel());
    const sent = randomBytes(4 * 1024 * 1024);
    const paused = once(local, 'pause');
    peer.write(sent);
    await paused;
    // What the socket delivered and the channel could not send yet: its first write plus what queued behind it.
    expect(channel.writableLength).toBeGreaterThanOrEqual(256 * 1024);
    expect(channel.writableLength).toBeLessThanOrEqual(256 * 1024 + 64 * 1024);

    channel.openWindow();
    await untilReceived(channel, () => receivedBytes(channel) >= sent.length);
    expect(Buffer.concat(channel.received).equals(sent)).toBe(true);
  });
});

test('splice tells `relayed` the size of every chunk it passes on, both ways', async () => {
  let relayed = 0;
  const { peer, channel } = await splicedPair(new TestChannel(), { relayed: (bytes) => (relayed += bytes) });
  const up = randomBytes(300 * 1024);
  peer.write(up);
  await untilReceived(channel, () => receivedBytes(channel) >= up.length);
  expect(relayed).toBe(up.length);
  const down = randomBytes(200 * 1024);
  channel.push(down);
  expect((await readExactly(peer, down.length)).equals(down)).toBe(true);
  expect(relayed).toBe(up.length + down.length);
});

describe('splice: a socket read into a reused buffer', () => {
  /** Holds every write for a turn of the event loop, as a channel waiting for its SSH window keeps the chunk. */
  class SlowChannel extends TestChannel {
    override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
      this.received.push(chunk);
      setImmediate(callback);
    }
  }

  test('chunks the channel keeps are not overwritten by later reads; the end of input ends the channel', async () => {
    const server = createServer({ allowHalfOpen: true });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const accepted = once(server, 'connection') as Promise<[Socket]>;
    const reads = new SocketReadBuffer(16 * 1024);
    const local = connect({
      port: (server.address() as AddressInfo).port,
      host: '127.0.0.1',
      allowHalfOpen: true,
      onread: reads.onread,
    });
    const [peer] = await accepted;
    const channel = new SlowChannel();
    let relayed = 0;
    splice(local, channel, reads, (bytes) => (relayed += bytes));
    cleanups.push(() => {
      local.destroy();
      peer.destroy();
      server.close();
    });
    const sent = randomBytes(4 * 1024 * 1024);
    const finished = once(channel, 'finish');
    peer.end(sent);
    await finished;
    expect(Buffer.concat(channel.received).equals(sent)).toBe(true);
    expect(relayed).toBe(sent.length);
  });
});
