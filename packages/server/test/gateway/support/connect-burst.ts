// Opens argv[3] TCP connections to 127.0.0.1:argv[2] at once after printing "go"; prints the slowest connect time in
// milliseconds. Used by agent-listener-backlog.test.ts.
import { connect, type Socket } from 'node:net';

const [port, count] = [Number(process.argv[2]), Number(process.argv[3])];
process.stdout.write('go\n');
const started = performance.now();
const sockets: Socket[] = [];
const times = await Promise.all(
  Array.from(
    { length: count },
    () =>
      new Promise<number>((resolve, reject) => {
        const socket = connect({ port, host: '127.0.0.1' });
        sockets.push(socket);
        socket.once('connect', () => resolve(performance.now() - started));
        socket.once('error', reject);
      }),
  ),
);
process.stdout.write(`slowest ${Math.round(Math.max(...times))}\n`);
for (const socket of sockets) socket.destroy();
