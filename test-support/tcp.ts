import { once } from 'node:events';
import { connect, createServer, type Server } from 'node:net';

/** Sends `text` to 127.0.0.1:`port`, half-closes, and resolves with everything the other end sent back. */
export function roundTrip(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.once('end', () => resolve(received));
    socket.once('error', reject);
    socket.end(text);
  });
}

/** A TCP echo server on 127.0.0.1 (half-close kept: a peer that ends its side still gets its whole echo). */
export async function startEchoServer(): Promise<Server> {
  const echo = createServer({ allowHalfOpen: true }, (socket) => socket.pipe(socket));
  echo.listen(0, '127.0.0.1');
  await once(echo, 'listening');
  return echo;
}
