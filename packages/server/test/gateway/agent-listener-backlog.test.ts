import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startGatewayServer, type GatewayServer } from './helpers.js';

const BURST = fileURLToPath(new URL('./support/connect-burst.ts', import.meta.url));
/** More than node's default backlog of 511, fewer than svcd's 4,096 (and than this machine's somaxconn, 4,096). */
const CONNECTIONS = 1200;
/** The kernel retries a dropped connection after 1 s, then 3 s. */
const KERNEL_RETRY_MS = 1000;
const BLOCKED_MS = 1500;

let t: GatewayServer;
beforeAll(async () => {
  t = await startGatewayServer();
});
afterAll(async () => {
  await t.stop();
});

test('a burst of agent connections arriving while svcd is busy waits in the backlog, none for the kernel retry', async () => {
  const port = Number(new URL(t.url).port);
  const child = spawn(process.execPath, ['--import', 'tsx', BURST, String(port), String(CONNECTIONS)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  let blocked = false;
  const slowest = new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.startsWith('go\n') && !blocked) {
        blocked = true;
        // svcd accepts nothing meanwhile: every connection has to wait in the listen backlog.
        const until = Date.now() + BLOCKED_MS;
        while (Date.now() < until);
      }
      const match = /slowest (\d+)/.exec(output);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`connect-burst exited with ${code}: ${output}`)));
  });
  expect(await slowest).toBeLessThan(KERNEL_RETRY_MS);
});
