import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { JOB_FRAME, MAX_JOB_FRAME_BYTES, type JobEnd } from '@svc/protocol';
import {
  JobOutputDecoder,
  JobOutputFormatError,
  MAX_JOB_HEADER_LINE_BYTES,
  encodeJobData,
  encodeJobEnd,
  encodeJobHeader,
  type JobOutputPart,
} from '../src/job-frames.js';

const JID = randomUUID();
const END: JobEnd = {
  status: 'failed',
  exit_code: 2,
  finished_at: '2026-11-25T15:04:05.123Z',
  error: 'exit status 2',
  stdout_truncated: true,
  stderr_truncated: false,
};

/** A whole channel: header, then stdout/stderr chunks in order, then the end frame. */
function channelBytes(chunks: { stream: 'stdout' | 'stderr'; data: Buffer }[], replay = false): Buffer {
  return Buffer.concat([
    encodeJobHeader({ jid: JID, replay }),
    ...chunks.flatMap(({ stream, data }) => encodeJobData(stream, data)),
    encodeJobEnd(END),
  ]);
}

/** Feeds the bytes in pieces of the given sizes (cycled) and collects the parts. */
function decodeInPieces(
  bytes: Buffer,
  sizes: number[],
): { parts: JobOutputPart[]; decoder: JobOutputDecoder } {
  const decoder = new JobOutputDecoder();
  const parts: JobOutputPart[] = [];
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const size = sizes[i % sizes.length] ?? 1;
    parts.push(...decoder.push(bytes.subarray(at, at + size)));
    at += size;
  }
  return { parts, decoder };
}

function joined(parts: JobOutputPart[], stream: 'stdout' | 'stderr'): Buffer {
  return Buffer.concat(parts.flatMap((part) => (part.kind === stream ? [part.data] : [])));
}

describe('encoding', () => {
  test('a frame is type, big-endian length and payload', () => {
    const [frame] = encodeJobData('stderr', Buffer.from('hi'));
    expect(frame).toEqual(Buffer.from([JOB_FRAME.stderr, 0, 0, 0, 2, 0x68, 0x69]));
  });

  test('data larger than one frame is split into full frames and a rest', () => {
    const data = randomBytes(2 * MAX_JOB_FRAME_BYTES + 10);
    const frames = encodeJobData('stdout', data);
    expect(frames.map((f) => f.readUInt32BE(1))).toEqual([MAX_JOB_FRAME_BYTES, MAX_JOB_FRAME_BYTES, 10]);
    expect(encodeJobData('stdout', Buffer.alloc(0))).toEqual([]);
  });

  test('the header is one JSON line', () => {
    expect(encodeJobHeader({ jid: JID, replay: true }).toString()).toBe(`{"jid":"${JID}","replay":true}\n`);
  });

  test('an invalid end record is refused before it is sent', () => {
    expect(() => encodeJobEnd({ ...END, status: 'running' as 'failed' })).toThrow();
  });
});

describe('decoding', () => {
  const stdout = randomBytes(3 * MAX_JOB_FRAME_BYTES + 123);
  const stderr = Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x28]);
  const bytes = channelBytes([
    { stream: 'stdout', data: stdout.subarray(0, 1000) },
    { stream: 'stderr', data: stderr },
    { stream: 'stdout', data: stdout.subarray(1000) },
  ]);

  test.each([
    ['one chunk', [bytes.length]],
    ['single bytes', [1]],
    ['odd pieces across frame borders', [3, 7, 4096, 65_541, 2]],
    ['ssh2-sized packets', [32 * 1024]],
  ])('the parts come out whole and in order from %s', (_name, sizes) => {
    const { parts, decoder } = decodeInPieces(bytes, sizes);
    expect(parts[0]).toEqual({ kind: 'header', header: { jid: JID, replay: false } });
    expect(parts.at(-1)).toEqual({ kind: 'end', end: END });
    expect(joined(parts, 'stdout').equals(stdout)).toBe(true);
    expect(joined(parts, 'stderr').equals(stderr)).toBe(true);
    // stderr arrived between the two stdout chunks
    const kinds = parts.map((p) => p.kind).filter((kind, i, all) => kind !== all[i - 1]);
    expect(kinds).toEqual(['header', 'stdout', 'stderr', 'stdout', 'end']);
    expect(decoder.finished).toBe(true);
  });

  test('a channel with no output is a header and an end', () => {
    const { parts } = decodeInPieces(channelBytes([], true), [5]);
    expect(parts).toEqual([
      { kind: 'header', header: { jid: JID, replay: true } },
      { kind: 'end', end: END },
    ]);
  });

  test('output is passed on before its frame is complete', () => {
    const decoder = new JobOutputDecoder();
    const [first] = encodeJobData('stdout', Buffer.from('hello world'));
    const parts = decoder.push(Buffer.concat([header, (first ?? Buffer.alloc(0)).subarray(0, 10)]));
    expect(parts.at(-1)).toEqual({ kind: 'stdout', data: Buffer.from('hello') });
  });

  test('not finished before the end frame', () => {
    const decoder = new JobOutputDecoder();
    decoder.push(bytes.subarray(0, bytes.length - 1));
    expect(decoder.finished).toBe(false);
  });

  const header = encodeJobHeader({ jid: JID, replay: false });
  const rawFrame = (type: number, length: number, payload = Buffer.alloc(0)) => {
    const head = Buffer.alloc(5);
    head.writeUInt8(type, 0);
    head.writeUInt32BE(length, 1);
    return Buffer.concat([head, payload]);
  };

  test.each([
    ['a header that is not JSON', Buffer.from('hello\n'), /header line is not JSON/],
    ['a header without a jid', Buffer.from('{"replay":false}\n'), /invalid header line/],
    ['a header line that never ends', Buffer.alloc(MAX_JOB_HEADER_LINE_BYTES, 0x20), /no header line within/],
    ['an unknown frame type', Buffer.concat([header, rawFrame(9, 1)]), /unknown frame type 9/],
    [
      'an oversized frame',
      Buffer.concat([header, rawFrame(JOB_FRAME.stdout, MAX_JOB_FRAME_BYTES + 1)]),
      /exceeds the limit/,
    ],
    [
      'an end frame that is not a result',
      Buffer.concat([header, rawFrame(JOB_FRAME.end, 2, Buffer.from('{}'))]),
      /invalid end frame/,
    ],
    ['an empty end frame', Buffer.concat([header, rawFrame(JOB_FRAME.end, 0)]), /end frame is empty/],
    [
      'bytes after the end frame',
      Buffer.concat([header, encodeJobEnd(END), Buffer.from('x')]),
      /bytes after the end frame/,
    ],
  ])('%s is a format error', (_name, input, message) => {
    const decoder = new JobOutputDecoder();
    expect(() => decoder.push(input)).toThrow(JobOutputFormatError);
    expect(() => new JobOutputDecoder().push(input)).toThrow(message);
  });

  test('bytes pushed after a finished channel are a format error', () => {
    const decoder = new JobOutputDecoder();
    decoder.push(Buffer.concat([header, encodeJobEnd(END)]));
    expect(() => decoder.push(Buffer.from('x'))).toThrow(/bytes after the end frame/);
  });
});
