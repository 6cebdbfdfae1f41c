import { describe, expect, test } from 'vitest';
import { DescriptorGauge, descriptorReserve } from '../../src/infra/descriptor-gauge.js';

/** A gauge over a settable count of open descriptors and a settable clock. */
function gauge(limit: number, reserve?: number) {
  const state = { open: 0 as number | 'exhausted' | undefined, now: 0, reads: 0 };
  const g = new DescriptorGauge(
    limit,
    reserve,
    () => {
      state.reads += 1;
      return state.open;
    },
    () => state.now,
  );
  return { g, state };
}

describe('descriptor reserve', () => {
  test('is 5 % of the limit, at least 64 and at most 1,000', () => {
    expect(descriptorReserve(20_000)).toBe(1_000);
    expect(descriptorReserve(1_048_576)).toBe(1_000);
    expect(descriptorReserve(4_096)).toBe(205);
    expect(descriptorReserve(1_024)).toBe(64);
  });
});

describe('DescriptorGauge', () => {
  test('admits agents below the limit less the reserve, and refuses from there on', () => {
    const { g, state } = gauge(1_000, 100);
    state.open = 899;
    expect(g.admitsAgent()).toBe(true);
    expect(g.use()).toEqual({ used: 899, limit: 1_000, agentHighWater: 900 });
    state.now += 250;
    state.open = 900;
    expect(g.admitsAgent()).toBe(false);
    // Other connections on the agent port are still answered until half the reserve is gone.
    expect(g.admitsConnection()).toBe(true);
    state.now += 250;
    state.open = 950;
    expect(g.admitsConnection()).toBe(false);
  });

  test('counts accepted connections between two reads of /proc, which it makes at most every 250 ms', () => {
    const { g, state } = gauge(1_000, 100);
    state.open = 890;
    expect(g.admitsAgent()).toBe(true);
    for (let i = 0; i < 10; i++) g.accepted();
    state.now += 249;
    expect(g.admitsAgent()).toBe(false);
    expect(state.reads).toBe(1);
    state.now += 1;
    state.open = 880;
    expect(g.use()?.used).toBe(880);
    expect(state.reads).toBe(2);
  });

  test('a read that fails for want of descriptors means all are in use', () => {
    const { g, state } = gauge(1_000, 100);
    state.open = 'exhausted';
    expect(g.use()?.used).toBe(1_000);
    expect(g.admitsAgent()).toBe(false);
    expect(g.admitsConnection()).toBe(false);
  });

  test('knows nothing, and admits everything, without /proc or without a limit', () => {
    const noProc = gauge(1_000, 100);
    noProc.state.open = undefined;
    expect(noProc.g.use()).toBeUndefined();
    expect(noProc.g.admitsAgent()).toBe(true);
    const unlimited = gauge(Infinity);
    unlimited.state.open = 10;
    expect(unlimited.g.use()).toBeUndefined();
    expect(unlimited.g.admitsConnection()).toBe(true);
  });
});
