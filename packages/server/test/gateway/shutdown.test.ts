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
});
