import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorBody } from '@svc/protocol';

export interface ListenerError {
  status: number;
  code: string;
  title: string;
  detail?: string;
  headers?: Record<string, string>;
}

const bodyOf = (error: ListenerError): string =>
  JSON.stringify({
    errors: [{ code: error.code, title: error.title, detail: error.detail ?? '' }],
  } satisfies ErrorBody);

/** Answers a plain HTTP request on the agent listener with the API's error shape. */
export function sendError(res: ServerResponse, error: ListenerError): void {
  const body = bodyOf(error);
  res.writeHead(error.status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...error.headers,
  });
  res.end(body);
}

/** Refuses a WebSocket upgrade on its raw socket and closes it. */
export function refuseUpgrade(socket: Duplex, error: ListenerError): void {
  if (!socket.writable) {
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
  socket.end(`HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}\r\n${head}\r\n${body}`);
}
