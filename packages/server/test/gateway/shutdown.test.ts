import Sqlite from 'better-sqlite3';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { WebSocket } from 'ws';
import { connectClient } from '../../../../test-support/agent-client.js';
import { SHUTDOWN_GRACE_MS } from '../../src/gateway/live-connections.js';
import { logsWith, startGatewayServer } from './helpers.js';

describe('shutdown', () => {
  test('closes agent connections (cutting unresponsive ones after the short shutdown grace) and the listener', async () => {
    const t = await startGatewayServer();
    try {
      const polite = await connectClient(t.agent(), { client_id: 'polite' });
      const stuck = await connectClient(t.agent(), { client_id: 'stuck' });
      stuck.pause();
      // The stuck agent never answers the polite close: close() ends only because it cuts that link.
      await t.server.close();
      await polite.closed;
      await stuck.closed;
      expect(
        logsWith(t, 'closing agent connection').map((l) => [l.client_id, l.reason, l.grace_ms] as const),
      ).toEqual(
        expect.arrayContaining([
          ['polite', 'svcd is shutting down', SHUTDOWN_GRACE_MS],
          ['stuck', 'svcd is shutting down', SHUTDOWN_GRACE_MS],
        ]),
      );
      const refused = await new Promise<string>((resolve) => {
        const ws = new WebSocket(t.url, 'svc-v1');
        ws.once('open', () => resolve('open'));
        ws.once('error', (err) => resolve((err as NodeJS.ErrnoException).code ?? err.message));
      });
      expect(refused).toBe('ECONNREFUSED');
    } finally {
      await t.stop();
    }
  });

  test('a stop before the process exits stores every client disconnected, then says goodbye without tearing down', async () => {
    const t = await startGatewayServer();
    const dataDir = t.config.server.data_dir;
    try {
      const first = await connectClient(t.agent(), { client_id: 'first' });
      const second = await connectClient(t.agent(), { client_id: 'second' });
      await t.server.close({ processExits: true });
      // Both rows say disconnected before any goodbye: the database is already closed when the goodbyes go.
      const db = new Sqlite(join(dataDir, 'svcd.db'), { readonly: true });
      const rows = db.prepare('SELECT id, connection_state FROM clients ORDER BY id').all() as {
        id: string;
        connection_state: string;
      }[];
      db.close();
      expect(rows).toEqual([
        { id: 'first', connection_state: 'disconnected' },
        { id: 'second', connection_state: 'disconnected' },
      ]);
      // Each agent got the goodbye (SSH disconnect, then the end of its stream) and its link ended.
      await first.closed;
      await second.closed;
      // One line for all the goodbyes, none per agent (19,000 log lines would slow the stop down).
      expect(logsWith(t, 'closing agent connection')).toEqual([]);
      expect(logsWith(t, 'said goodbye to every agent').map((l) => l.agents)).toEqual([2]);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
