import { randomBytes } from 'node:crypto';
import { expect, test } from 'vitest';
import { FrameReader } from '../src/ws-frame-reader.js';
import { clientFrame } from './support/ws-peers.js';

/** A server's reader; collects what it finds. */
function reader(maxMessageBytes = 0) {
  const found = { data: [] as Buffer[], control: [] as [number, Buffer][], errors: [] as [number, string][] };
  const frames = new FrameReader({
    masked: true,
    maxMessageBytes,
    handler: {
      data: (payload) => found.data.push(Buffer.from(payload)),
      control: (opcode, payload) => found.control.push([opcode, Buffer.from(payload)]),
      protocolError: (code, message) => found.errors.push([code, message]),
    },
  });
  return { frames, found };
}

test('frames split at every byte position read the same as whole', () => {
  const payloads = [randomBytes(5), randomBytes(300), randomBytes(70_000)];
  const wire = Buffer.concat([
    clientFrame(0x2, payloads[0] as Buffer, { fin: false }),
    clientFrame(0x9, Buffer.from('ping!')),
    clientFrame(0x0, payloads[1] as Buffer, { fin: false }),
    clientFrame(0x0, payloads[2] as Buffer),
    clientFrame(0x2, Buffer.alloc(0)),
  ]);
  const expected = Buffer.concat(payloads);
  for (const cut of [1, 2, 3, 7, 10, 13, 14, 15, 140, 317, 330, 331, 4096, wire.length - 1]) {
    const { frames, found } = reader();
    // Copies: the reader unmasks in place.
    frames.push(Buffer.from(wire.subarray(0, cut)));
    frames.push(Buffer.from(wire.subarray(cut)));
    expect(Buffer.concat(found.data).equals(expected), `cut at ${cut}`).toBe(true);
    expect(found.control).toEqual([[0x9, Buffer.from('ping!')]]);
    expect(found.errors).toEqual([]);
  }
  // And one byte at a time.
  const { frames, found } = reader();
  for (let i = 0; i < wire.length; i++) frames.push(Buffer.from(wire.subarray(i, i + 1)));
  expect(Buffer.concat(found.data).equals(expected)).toBe(true);
});

test('a frame spanning reads is handed on in slices, not gathered', () => {
  const { frames, found } = reader();
  const wire = clientFrame(0x2, randomBytes(30_000));
  for (let at = 0; at < wire.length; at += 8192) frames.push(Buffer.from(wire.subarray(at, at + 8192)));
  expect(found.data.length).toBeGreaterThan(1);
  expect(Buffer.concat(found.data).length).toBe(30_000);
});

test.each([
  ['RSV bits', clientFrame(0x2, Buffer.from('x'), { rsv: 4 }), 1002, /RSV/],
  ['an unmasked frame to a server', clientFrame(0x2, Buffer.from('x'), { mask: false }), 1002, /unmasked/],
  ['a text frame', clientFrame(0x1, Buffer.from('hello')), 1003, /text frame/],
  ['an unknown opcode', clientFrame(0x3, Buffer.from('x')), 1002, /opcode 0x3/],
  ['a continuation without a message', clientFrame(0x0, Buffer.from('x')), 1002, /continuation/],
  [
    'a new message inside a fragmented one',
    Buffer.concat([clientFrame(0x2, Buffer.from('a'), { fin: false }), clientFrame(0x2, Buffer.from('b'))]),
    1002,
    /new message/,
  ],
  [
    'a fragmented control frame',
    clientFrame(0x9, Buffer.from('x'), { fin: false }),
    1002,
    /fragmented control/,
  ],
  ['a long control frame', clientFrame(0x9, Buffer.alloc(126)), 1002, /control frame of 126 bytes/],
])('%s is a protocol error, and nothing after it is read', (_name, wire, code, message) => {
  const { frames, found } = reader();
  frames.push(Buffer.concat([wire, clientFrame(0x2, Buffer.from('after'))]));
  expect(found.errors).toHaveLength(1);
  expect(found.errors[0]?.[0]).toBe(code);
  expect(found.errors[0]?.[1]).toMatch(message);
  expect(Buffer.concat(found.data).toString()).not.toContain('after');
});

test('a message over the limit is refused with 1009, counted across its fragments', () => {
  const { frames, found } = reader(1000);
  frames.push(clientFrame(0x2, Buffer.alloc(1000)));
  expect(found.errors).toEqual([]);
  frames.push(clientFrame(0x2, Buffer.alloc(600), { fin: false }));
  frames.push(clientFrame(0x0, Buffer.alloc(600)));
  expect(found.errors).toEqual([[1009, 'message of 1200 bytes or more (limit 1000)']]);
});

test("a client's reader refuses masked frames", () => {
  const errors: string[] = [];
  const frames = new FrameReader({
    masked: false,
    maxMessageBytes: 0,
    handler: { data: () => undefined, control: () => undefined, protocolError: (_c, m) => errors.push(m) },
  });
  frames.push(clientFrame(0x2, Buffer.from('x')));
  expect(errors).toEqual(['masked frame from a server']);
});
