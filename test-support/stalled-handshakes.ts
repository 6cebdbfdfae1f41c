/**
 * Agents that never log in, in a process of their own: each opens the agent WebSocket, sends an SSH banner and
 * stalls; when svcd closes it, it connects again at once. Runs for `durationMs`.
 * `groups` is a list of `<local address>:<count>`, e.g. `127.0.0.2:20,127.0.0.1:20`. Prints `connecting <n>`
 * once all connections are open (upgraded or waiting for their upgrade) and `upgraded <n>` (upgrades answered 101)
 * before it exits.
 *
 *   node --import tsx test-support/stalled-handshakes.ts <port> <groups> <durationMs>
 */
import { WebSocket } from 'ws';

const [port = '0', groups = '', durationMs = '0'] = process.argv.slice(2);
let stopped = false;
let upgraded = 0;
let opened = 0;
const open = new Set<WebSocket>();
const total = groups
  .split(',')
  .map((group) => Number(group.split(':')[1]))
  .reduce((sum, count) => sum + count, 0);

function stall(localAddress: string): void {
  if (stopped) return;
  const ws = new WebSocket(`ws://127.0.0.1:${port}/`, 'svc-v1', { localAddress });
  open.add(ws);
  ws.on('open', () => {
    upgraded += 1;
    ws.send(Buffer.from('SSH-2.0-stalled_1.0\r\n'));
  });
  ws.on('error', () => undefined);
  ws.on('close', () => {
    open.delete(ws);
    setImmediate(() => stall(localAddress));
  });
  opened += 1;
  if (opened === total) console.log(`connecting ${total}`);
}

for (const group of groups.split(',')) {
  const [address = '', count = '0'] = group.split(':');
  for (let i = 0; i < Number(count); i++) stall(address);
}
setTimeout(() => {
  stopped = true;
  for (const ws of open) ws.terminate();
  console.log(`upgraded ${upgraded}`);
}, Number(durationMs));
