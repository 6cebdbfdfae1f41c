import { randomFillSync } from 'node:crypto';
import { maskInPlace } from './ws-mask.js';
import { pooledRandomFill } from './pooled-random-fill.js';

/** RFC 6455 5.2 opcodes. */
export const OPCODE = {
  continuation: 0x0,
  text: 0x1,
  binary: 0x2,
  close: 0x8,
  ping: 0x9,
  pong: 0xa,
} as const;

/** RFC 6455 7.4.1 status codes used here. */
export const CLOSE_CODE = {
  normal: 1000,
  protocolError: 1002,
  unsupportedData: 1003,
  tooBig: 1009,
} as const;

const FIN = 0x80;
const MASKED = 0x80;
/** Control frames carry at most this many payload bytes (RFC 6455 5.5). */
export const MAX_CONTROL_PAYLOAD = 125;

/** A fresh masking key from the CSPRNG (pooled: one key per frame would otherwise cost a syscall each). */
export const randomMaskKey: () => Buffer = (() => {
  const fill = pooledRandomFill(randomFillSync);
  return () => fill(Buffer.allocUnsafe(4));
})();

/** The header of a frame of `length` payload bytes, with the masking key if there is one (RFC 6455 5.2). */
export function frameHeader(opcode: number, length: number, key: Buffer | undefined, fin = true): Buffer {
  const lengthBytes = length < 126 ? 0 : length < 65_536 ? 2 : 8;
  const header = Buffer.allocUnsafe(2 + lengthBytes + (key ? 4 : 0));
  header[0] = (fin ? FIN : 0) | opcode;
  header[1] = (key ? MASKED : 0) | (lengthBytes === 0 ? length : lengthBytes === 2 ? 126 : 127);
  if (lengthBytes === 2) header.writeUInt16BE(length, 2);
  if (lengthBytes === 8) {
    header.writeUInt32BE(Math.floor(length / 2 ** 32), 2);
    header.writeUInt32BE(length >>> 0, 6);
  }
  key?.copy(header, 2 + lengthBytes);
  return header;
}

/** A whole control frame (ping, pong, close), masked with a fresh key when `mask` (a client's). */
export function controlFrame(opcode: number, payload: Buffer, mask: boolean): Buffer {
  const body = payload.subarray(0, MAX_CONTROL_PAYLOAD);
  const key = mask ? randomMaskKey() : undefined;
  const frame = Buffer.concat([frameHeader(opcode, body.length, key), body]);
  if (key) maskInPlace(frame.subarray(frame.length - body.length), key);
  return frame;
}

/** A close frame's payload: the status code and a reason (cut to fit in a control frame). */
export function closePayload(code: number, reason = ''): Buffer {
  const text = Buffer.from(reason).subarray(0, MAX_CONTROL_PAYLOAD - 2);
  const payload = Buffer.allocUnsafe(2 + text.length);
  payload.writeUInt16BE(code, 0);
  text.copy(payload, 2);
  return payload;
}
