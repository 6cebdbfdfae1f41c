import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AppError, ErrorBody } from '@svc/protocol';
import { STATUS_BY_KIND } from './error-status.js';

/** An error answered outside Fastify (agent listener, malformed HTTP), in the API's error shape. */
export interface RawError {
  status: number;
  code: string;
  title: string;
  detail?: string;
  headers?: Record<string, string>;
}

export const rawErrorOf = (err: AppError): RawError => ({
  status: STATUS_BY_KIND[err.kind],
  code: err.code,
  title: err.message,
  detail: err.detail,
});

const bodyOf = (error: RawError): string =>
  JSON.stringify({
    errors: [{ code: error.code, title: error.title, detail: error.detail ?? '' }],
  } satisfies ErrorBody);

/** Answers a plain HTTP request with the API's error shape. */
export function sendError(res: ServerResponse, error: RawError): void {
  const body = bodyOf(error);
  res.writeHead(error.status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...error.headers,
  });
  res.end(body);
}

/**
 * Writes a whole error response on a raw socket (a refused upgrade, a request Node could not parse) and closes it.
 * The socket is destroyed once the response is flushed: only ending it would leave it half-open for as long as
 * a misbehaving peer keeps its side open. A socket with unsent output is destroyed at once: a peer that does not
 * read would keep the flush, and so the socket, waiting.
 */
export function answerOnSocket(socket: Duplex, error: RawError): void {
  if (!socket.writable || socket.writableLength > 0) {
    socket.destroy();
    return;
  }
  const body = bodyOf(error);
  const headers = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    connection: 'close',
    ...error.headers,
  };
  const head = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(`HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}\r\n${head}\r\n${body}`, () =>
    socket.destroy(),
  );
}
