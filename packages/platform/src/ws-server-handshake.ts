import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { acceptFor, WEBSOCKET_KEY } from './ws-accept.js';
import { WebSocketStream } from './ws-socket-stream.js';

/**
 * What is wrong with the WebSocket headers of an upgrade request (RFC 6455 4.2.1), or undefined; the messages
 * are those of the ws package. The method, Upgrade header and subprotocol are the caller's to check.
 */
export function upgradeHeaderProblem(headers: IncomingHttpHeaders): string | undefined {
  const key = headers['sec-websocket-key'];
  if (typeof key !== 'string' || !WEBSOCKET_KEY.test(key.trim()))
    return 'Missing or invalid Sec-WebSocket-Key header';
  if (headers['sec-websocket-version']?.trim() !== '13')
    return 'Missing or invalid Sec-WebSocket-Version header';
  return undefined;
}

/**
 * Answers a valid upgrade request (see `upgradeHeaderProblem`) with 101 and the `protocol` chosen, and opens
 * the WebSocket on its socket in the server role; `head` is what the socket read past the request. The 101 leaves
 * at the end of this turn of the event loop, with the frames written in it.
 */
export function acceptUpgrade(
  socket: Socket,
  request: { headers: IncomingHttpHeaders; head: Buffer },
  options: { protocol: string; maxMessageBytes: number },
): WebSocketStream {
  const key = (request.headers['sec-websocket-key'] ?? '').toString().trim();
  // The HTTP server's timeouts were for the request; an open WebSocket is not timed.
  socket.setTimeout(0);
  return new WebSocketStream(socket, {
    role: 'server',
    maxMessageBytes: options.maxMessageBytes,
    head: request.head,
    // Leaves with the server's first bytes (svcd's SSH identification), written in the same turn: a socket write
    // took ~0.2 ms of CPU on this VM's loopback, 3.5 % of svcd's CPU per agent in a reconnect storm (2026-11-29).
    opening:
      'HTTP/1.1 101 Switching Protocols\r\n' +
      'Upgrade: websocket\r\n' +
      'Connection: Upgrade\r\n' +
      `Sec-WebSocket-Accept: ${acceptFor(key)}\r\n` +
      `Sec-WebSocket-Protocol: ${options.protocol}\r\n\r\n`,
  });
}
