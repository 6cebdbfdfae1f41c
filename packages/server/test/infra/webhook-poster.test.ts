import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { fetchWebhookPoster } from '../../src/infra/alerts/webhook-poster.js';
import { freePort } from '../../../../test-support/process.js';

/** Answers /slow never, /redirect with a 302, anything else with 204. */
const server = createServer((request, response) => {
  if (request.url === '/slow') return;
  if (request.url === '/redirect') return void response.writeHead(302, { location: '/elsewhere' }).end();
  response.writeHead(204).end();
});
let base: string;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

test('resolves with the status; a redirect is not followed', async () => {
  const poster = fetchWebhookPoster(2000);
  expect(await poster.post(`${base}/ok`, '{}', { 'content-type': 'application/json' })).toBe(204);
  expect(await poster.post(`${base}/redirect`, '{}', {})).toBe(302);
});

test('an attempt with no answer within the timeout fails saying so', async () => {
  await expect(fetchWebhookPoster(200).post(`${base}/slow`, '{}', {})).rejects.toThrow(
    'no answer within 200 ms',
  );
});

test('a refused connection fails with the reason', async () => {
  const port = await freePort();
  await expect(fetchWebhookPoster(2000).post(`http://127.0.0.1:${port}/`, '{}', {})).rejects.toThrow(
    /the request failed: .*ECONNREFUSED/,
  );
});
