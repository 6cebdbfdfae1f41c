import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { checkPort } from '../src/tunnels/check-port.js';

let server: Server;
let port: number;

beforeAll(async () => {
  server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

test('an accepting port is open', async () => {
  expect(await checkPort('127.0.0.1', port, 2000)).toEqual({ open: true });
});

test('a refused port is closed with the reason', async () => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const freePort = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const result = await checkPort('127.0.0.1', freePort, 2000);
  expect(result.open).toBe(false);
  expect(result.error).toMatch(/ECONNREFUSED/);
});

test('an unresolvable host is closed with the reason', async () => {
  const result = await checkPort('no-such-host.invalid', 80, 5000);
  expect(result.open).toBe(false);
  expect(result.error).toMatch(/ENOTFOUND|EAI_AGAIN/);
});
