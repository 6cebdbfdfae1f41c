/** A client row read back (core/clients/stored-client.ts): the open tunnels it lists count only while connected. */
import { expect, test } from 'vitest';
import type { StoredClient } from '../../src/core/clients/ports.js';
import { fromStored } from '../../src/core/clients/stored-client.js';

const TUNNEL = {
  id: '3',
  lhost: '0.0.0.0',
  lport: '21000',
  rhost: '127.0.0.1',
  rport: '22',
  scheme: 'ssh',
  acl: '10.0.0.0/8',
  idle_timeout_minutes: 5,
  auto_close: null,
  tunnel_url: 'ssh://node-b.example:21000',
  created_at: '2026-11-28T20:00:00.000Z',
};

const row = (connected: boolean, tunnels: unknown): StoredClient => ({
  id: 'c1',
  clientAuthId: 'agent',
  connectionState: connected ? 'connected' : 'disconnected',
  disconnectedAt: connected ? null : Date.parse('2026-11-28T21:00:00Z'),
  owner: connected ? { nodeId: 'node-b', epoch: 1 } : null,
  details: { name: 'one', tunnels },
});

test("a connected row (held by another cluster node) lists that node's open tunnels", () => {
  expect(fromStored(row(true, [TUNNEL])).tunnels).toEqual([TUNNEL]);
});

test('a disconnected row has no open tunnel, whatever its details say', () => {
  expect(fromStored(row(false, [TUNNEL])).tunnels).toEqual([]);
});

test('tunnels that do not parse (an older or foreign writer) are left out rather than shown half', () => {
  expect(fromStored(row(true, [{ ...TUNNEL, lport: 21000 }])).tunnels).toEqual([]);
  expect(fromStored(row(true, 'none')).tunnels).toEqual([]);
  expect(fromStored(row(true, undefined)).tunnels).toEqual([]);
});
