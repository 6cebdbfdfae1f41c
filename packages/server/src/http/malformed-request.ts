import { maxHeaderSize } from 'node:http';
import type { Duplex } from 'node:stream';
import { AppError, ERROR_CODES } from '@svc/protocol';
import { answerOnSocket, rawErrorOf } from './raw-reply.js';

/** An error Node's HTTP server reports through 'clientError': a parser error or a request timeout. */
export type ClientError = Error & { code?: string; reason?: string };

/** What the caller of one listener has to change when its request was too slow. */
export interface TimeoutHint {
  /** E.g. "send the headers within 10s and the whole request within 30s". */
  timeoutDetail: string;
}

/** Node's HTTP client errors as ours: 408 for a slow request, 431 for oversized headers, 400 for the rest. */
export function malformedRequestError(err: ClientError, hint: TimeoutHint): AppError {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return new AppError(
      'timeout',
      ERROR_CODES.requestTimeout,
      'The request did not arrive in time',
      hint.timeoutDetail,
    );
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    return new AppError(
      'headers_too_large',
      ERROR_CODES.headersTooLarge,
      'Request headers too large',
      `send at most ${maxHeaderSize} bytes of request line and headers`,
    );
  }
  return new AppError(
    'invalid',
    ERROR_CODES.malformedHttp,
    'Malformed HTTP request',
    err.reason ?? err.message,
  );
}

/** A response Node has begun sending on this socket; a second one must not be written into it. */
const responseStarted = (socket: Duplex): boolean =>
  (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage?.headersSent === true;

/**
 * Handles Node's 'clientError': answers in the API's error shape and closes the connection. Returns the error
 * answered, or undefined when the peer had already gone (nothing to answer, nothing worth logging).
 */
export function answerClientError(err: ClientError, socket: Duplex, hint: TimeoutHint): AppError | undefined {
  if (err.code === 'ECONNRESET' || socket.destroyed) {
    socket.destroy();
    return undefined;
  }
  const error = malformedRequestError(err, hint);
  if (responseStarted(socket)) socket.destroy();
  else answerOnSocket(socket, rawErrorOf(error));
  return error;
}
