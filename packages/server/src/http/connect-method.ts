import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { AppError, ERROR_CODES } from '@svc/protocol';
import { answerOnSocket, rawErrorOf } from './raw-reply.js';

const NOT_A_PROXY = new AppError(
  'method_not_allowed',
  ERROR_CODES.methodNotAllowed,
  'Method CONNECT is not allowed: svcd is not a proxy',
  'send GET, POST, PUT or DELETE requests to the API under /api/v1',
);

/**
 * Node hands CONNECT requests to 'connect' listeners and, without one, destroys the socket (a reset). They are
 * answered instead: a 405 in the API's error shape, then the connection is closed.
 */
export function refuseConnectMethod(server: Server): void {
  server.on('connect', (_request: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => undefined);
    answerOnSocket(socket, { ...rawErrorOf(NOT_A_PROXY), headers: { allow: 'GET, POST, PUT, DELETE' } });
  });
}
