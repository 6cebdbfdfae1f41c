/**
 * The bytes of a job output channel (see @svc/protocol jobs.ts): one JSON header line, then frames
 * `[type: u8][length: u32 BE][payload]` of stdout and stderr chunks, then one `end` frame holding the JSON result.
 */
import {
  JOB_FRAME,
  JOB_FRAME_HEADER_BYTES,
  MAX_JOB_FRAME_BYTES,
  jobEndSchema,
  jobOutputHeaderSchema,
  type JobEnd,
  type JobOutputHeader,
} from '@svc/protocol';
import './zod-english.js';

/** Longest header line accepted, newline included; a real one is about 70 bytes. */
export const MAX_JOB_HEADER_LINE_BYTES = 1024;

export type JobStream = 'stdout' | 'stderr';

export type JobOutputPart =
  | { kind: 'header'; header: JobOutputHeader }
  | { kind: JobStream; data: Buffer }
  | { kind: 'end'; end: JobEnd };

/** The other end broke the output channel's format; the channel should be closed. */
export class JobOutputFormatError extends Error {
  override readonly name = 'JobOutputFormatError';
}

export function encodeJobHeader(header: JobOutputHeader): Buffer {
  return Buffer.from(`${JSON.stringify(header)}\n`, 'utf8');
}

function frame(type: number, payload: Buffer): Buffer {
  if (payload.length > MAX_JOB_FRAME_BYTES)
    throw new RangeError(
      `a job output frame holds at most ${MAX_JOB_FRAME_BYTES} bytes, got ${payload.length}`,
    );
  const head = Buffer.allocUnsafe(JOB_FRAME_HEADER_BYTES);
  head.writeUInt8(type, 0);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/** Frames for one chunk of output, split so that no frame exceeds MAX_JOB_FRAME_BYTES. */
export function encodeJobData(stream: JobStream, data: Buffer): Buffer[] {
  const frames: Buffer[] = [];
  for (let at = 0; at < data.length; at += MAX_JOB_FRAME_BYTES)
    frames.push(frame(JOB_FRAME[stream], data.subarray(at, at + MAX_JOB_FRAME_BYTES)));
  return frames;
}

export function encodeJobEnd(end: JobEnd): Buffer {
  return frame(JOB_FRAME.end, Buffer.from(JSON.stringify(jobEndSchema.parse(end)), 'utf8'));
}

const STREAM_OF: Record<number, JobStream | undefined> = {
  [JOB_FRAME.stdout]: 'stdout',
  [JOB_FRAME.stderr]: 'stderr',
};

type DecoderState =
  | { at: 'header' }
  | { at: 'frame-head' }
  | { at: 'data'; stream: JobStream; remaining: number }
  | { at: 'end'; remaining: number }
  | { at: 'done' };

/**
 * Reads a job output channel chunk by chunk, however the bytes were split. Output is passed on as soon as it
 * arrives, as views of the received chunks (a frame split over several chunks comes out in several parts), so
 * the work per chunk does not depend on how the other end cut its writes. Throws JobOutputFormatError on anything
 * outside the format: a header line that is too long or not a valid header, an unknown frame type, an oversized
 * frame, an invalid end record, or bytes after the end frame.
 */
export class JobOutputDecoder {
  private state: DecoderState = { at: 'header' };
  /** Bytes of the header line, frame head or end record read so far (each bounded in size). */
  private held: Buffer[] = [];
  private heldBytes = 0;

  /** True once the end frame has been read. */
  get finished(): boolean {
    return this.state.at === 'done';
  }

  push(chunk: Buffer): JobOutputPart[] {
    const parts: JobOutputPart[] = [];
    let at = 0;
    while (at < chunk.length) {
      const state = this.state;
      switch (state.at) {
        case 'header':
          at = this.readHeader(chunk, at, parts);
          break;
        case 'frame-head':
          at = this.readFrameHead(chunk, at);
          break;
        case 'data': {
          const take = Math.min(state.remaining, chunk.length - at);
          parts.push({ kind: state.stream, data: chunk.subarray(at, at + take) });
          at += take;
          state.remaining -= take;
          if (state.remaining === 0) this.state = { at: 'frame-head' };
          break;
        }
        case 'end': {
          const take = Math.min(state.remaining, chunk.length - at);
          this.hold(chunk.subarray(at, at + take));
          at += take;
          state.remaining -= take;
          if (state.remaining === 0) this.finishEnd(parts);
          break;
        }
        case 'done':
          throw new JobOutputFormatError('bytes after the end frame');
      }
    }
    return parts;
  }

  private hold(bytes: Buffer): void {
    this.held.push(bytes);
    this.heldBytes += bytes.length;
  }

  /** The held bytes as one Buffer (a copy, so received chunks are not pinned); empties the hold. */
  private takeHeld(): Buffer {
    const all = Buffer.concat(this.held, this.heldBytes);
    this.held = [];
    this.heldBytes = 0;
    return all;
  }

  private readHeader(chunk: Buffer, at: number, parts: JobOutputPart[]): number {
    const room = MAX_JOB_HEADER_LINE_BYTES - this.heldBytes;
    const newline = chunk.subarray(at, at + room).indexOf(0x0a);
    if (newline < 0) {
      if (chunk.length - at >= room)
        throw new JobOutputFormatError(`no header line within ${MAX_JOB_HEADER_LINE_BYTES} bytes`);
      this.hold(chunk.subarray(at));
      return chunk.length;
    }
    this.hold(chunk.subarray(at, at + newline));
    const line = this.takeHeld();
    const header = jobOutputHeaderSchema.safeParse(parseJson(line, 'header line'));
    if (!header.success) throw new JobOutputFormatError(`invalid header line: ${header.error.message}`);
    parts.push({ kind: 'header', header: header.data });
    this.state = { at: 'frame-head' };
    return at + newline + 1;
  }

  private readFrameHead(chunk: Buffer, at: number): number {
    const take = Math.min(JOB_FRAME_HEADER_BYTES - this.heldBytes, chunk.length - at);
    this.hold(chunk.subarray(at, at + take));
    if (this.heldBytes < JOB_FRAME_HEADER_BYTES) return at + take;
    const head = this.takeHeld();
    const type = head.readUInt8(0);
    const length = head.readUInt32BE(1);
    const stream = STREAM_OF[type];
    if (type !== JOB_FRAME.end && stream === undefined)
      throw new JobOutputFormatError(`unknown frame type ${type}`);
    if (length > MAX_JOB_FRAME_BYTES)
      throw new JobOutputFormatError(`frame of ${length} bytes exceeds the limit of ${MAX_JOB_FRAME_BYTES}`);
    if (stream) this.state = length === 0 ? { at: 'frame-head' } : { at: 'data', stream, remaining: length };
    else if (length === 0) throw new JobOutputFormatError('the end frame is empty');
    else this.state = { at: 'end', remaining: length };
    return at + take;
  }

  private finishEnd(parts: JobOutputPart[]): void {
    const end = jobEndSchema.safeParse(parseJson(this.takeHeld(), 'end frame'));
    if (!end.success) throw new JobOutputFormatError(`invalid end frame: ${end.error.message}`);
    parts.push({ kind: 'end', end: end.data });
    this.state = { at: 'done' };
  }
}

function parseJson(bytes: Buffer, what: string): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new JobOutputFormatError(`the ${what} is not JSON`);
  }
}
