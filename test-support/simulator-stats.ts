import type { LoadSimulator, SimulatorStats } from '../bench/support/load-simulator.js';

/** Resolves once `done` holds for the simulator's counters (checked every 50 ms, at most 30 s). */
export async function untilStats(
  simulator: LoadSimulator,
  done: (s: SimulatorStats) => boolean,
): Promise<SimulatorStats> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const stats = simulator.snapshot();
    if (done(stats)) return stats;
    if (Date.now() > deadline) throw new Error(`timed out; simulator: ${JSON.stringify(stats)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
