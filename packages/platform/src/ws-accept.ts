import { createHash } from 'node:crypto';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** A Sec-WebSocket-Key: 16 bytes in base64 (RFC 6455 4.1). */
export const WEBSOCKET_KEY = /^[+/0-9A-Za-z]{22}==$/;

/** The Sec-WebSocket-Accept answering `key` (RFC 6455 4.2.2). */
export function acceptFor(key: string): string {
  return createHash('sha1')
    .update(key + GUID)
    .digest('base64');
}
