import { afterEach, expect, test, vi } from 'vitest';
import { AgentMemory, RECLAIM_MIN_GROWTH_BYTES } from '../src/connection/agent-memory.js';

const MIB = 2 ** 20;
const RECLAIMED =
  'gave back the memory of tunnel traffic and jobs (two full garbage collections, C heap trim)';
const LEFT_ALONE = 'left the memory of tunnel traffic and jobs to the next reclaim: RSS grew little';

interface Line {
  fields: Record<string, unknown>;
  msg: string;
}

/** An AgentMemory with a log kept in `lines` and an RSS the test sets. */
function agentMemory() {
  const lines: Line[] = [];
  const rss = { bytes: 50 * MIB };
  const log = {
    debug: (fields: object | string, msg?: string) =>
      void lines.push(
        typeof fields === 'string'
          ? { fields: {}, msg: fields }
          : { fields: fields as Record<string, unknown>, msg: msg ?? '' },
      ),
  };
  const memory = new AgentMemory(log, () => rss.bytes);
  const reclaims = () => lines.filter((line) => line.msg === RECLAIMED);
  return { memory, lines, rss, reclaims };
}

afterEach(() => {
  vi.useRealTimers();
});

test("a command between the reclaim's two collections lets it finish; small commands after it ask for none", async () => {
  // Real collections and C heap trim; only the reclaim's waits are the test's to advance.
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  const { memory, lines, rss, reclaims } = agentMemory();
  try {
    memory.jobEnded(); // the first job always gets a reclaim
    await vi.advanceTimersByTimeAsync(3_000); // quiet: its first collection
    memory.jobEnded(); // a command a few seconds later: leaves the begun reclaim alone
    await vi.advanceTimersByTimeAsync(3_000); // its second collection, when it was due
    await vi.waitFor(() => expect(reclaims()).toHaveLength(1));
    // Both jobs were before the one reclaim; starting it over would have pushed it 3 s further.
    expect(reclaims()[0]?.fields.jobs).toBe(2);

    // Afterwards a command that grew the agent by less than the bound asks for no reclaim at all.
    rss.bytes += RECLAIM_MIN_GROWTH_BYTES - MIB;
    memory.jobEnded();
    expect(lines.at(-1)?.msg).toBe(LEFT_ALONE);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(reclaims()).toHaveLength(1);
  } finally {
    memory.stop();
  }
});

test('a command before the first collection still puts the reclaim off until the jobs are quiet', async () => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  const { memory, reclaims } = agentMemory();
  try {
    memory.jobEnded();
    await vi.advanceTimersByTimeAsync(2_000);
    memory.jobEnded(); // within the quiet time: the wait starts again
    await vi.advanceTimersByTimeAsync(2_999 + 3_000);
    expect(reclaims()).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    await vi.waitFor(() => expect(reclaims()).toHaveLength(1));
    expect(reclaims()[0]?.fields.jobs).toBe(2);
  } finally {
    memory.stop();
  }
});
