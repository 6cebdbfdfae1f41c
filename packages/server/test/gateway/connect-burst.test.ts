import { expect, test } from 'vitest';
import { connectClient, type TestAgent } from '../../../../test-support/agent-client.js';
import { RECLAIM_MIN_CONNECTS } from '../../src/infra/memory-reclaim.js';
import { startGatewayServer, waitFor } from './helpers.js';

const RECLAIMED =
  'gave back the memory of a large multi-client run or a burst of agent connections (two full garbage collections, C heap trim)';

test('a burst of agent connections is followed, once over, by a reclaim of svcd memory', async () => {
  // The waits shortened from 10 s and 3 s: what is tested is that the burst is noticed and the reclaim runs.
  const t = await startGatewayServer({
    memoryReclaim: { quietMs: 1000, connectBurstQuietMs: 1000, secondCollectionMs: 300 },
  });
  const agents: TestAgent[] = [];
  try {
    // Ten at a time, as a fleet reconnecting after a restart comes back.
    for (let i = 0; i < RECLAIM_MIN_CONNECTS; i += 10) {
      const batch = Array.from({ length: 10 }, (_, k) =>
        connectClient(t.agent(), { client_id: `burst-${i + k}` }),
      );
      agents.push(...(await Promise.all(batch)));
    }
    expect(t.logs.some((line) => line.msg === RECLAIMED)).toBe(false);
    const line = await waitFor(() => t.logs.find((l) => l.msg === RECLAIMED), 30_000, 'the reclaim log line');
    expect(line.pauses_ms).toEqual([expect.any(Number), expect.any(Number)]);
    expect(line.trim_ms).toEqual(expect.any(Number));
  } finally {
    await Promise.all(agents.map((agent) => agent.close()));
    await t.stop();
  }
}, 60_000);
