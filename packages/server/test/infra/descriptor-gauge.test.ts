import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, test } from 'vitest';
import {
  DescriptorGauge,
  descriptorReserve,
  type DescriptorCount,
} from '../../src/infra/descriptor-gauge.js';

const gauges: DescriptorGauge[] = [];
afterEach(() => gauges.splice(0).forEach((g) => g.stop()));

/** A gauge over a settable count of open descriptors (read at start, and at each recount). */
function gauge(limit: number, open: DescriptorCount, reserve?: number) {
  const state = { open };
  const g = new DescriptorGauge(limit, {
    ...(reserve === undefined ? {} : { reserve }),
    firstCount: () => state.open,
    count: () => Promise.resolve(state.open),
  });
  gauges.push(g);
  return { g, state };
}

/** Something that closes, as a socket does. */
const connection = () => {
  const socket = new EventEmitter();
  return { socket, close: () => socket.emit('close') };
};

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
    const { g } = gauge(1_000, 899, 100);
    expect(g.admitsAgent()).toBe(true);
    expect(g.use()).toEqual({ used: 899, limit: 1_000, agentHighWater: 900 });
    g.track(connection().socket);
    expect(g.admitsAgent()).toBe(false);
    // Other connections on the agent port are still answered until half the reserve is gone.
    expect(g.admitsConnection()).toBe(true);
    for (let i = 0; i < 50; i++) g.track(connection().socket);
    expect(g.use()?.used).toBe(950);
    expect(g.admitsConnection()).toBe(false);
  });

  test('tracks connections opening and closing between two counts', async () => {
    const { g, state } = gauge(1_000, 890, 100);
    const conns = Array.from({ length: 10 }, connection);
    for (const c of conns) g.track(c.socket);
    expect(g.admitsAgent()).toBe(false);
    conns[0]!.close();
    expect(g.use()?.used).toBe(899);
    expect(g.admitsAgent()).toBe(true);
    // A count replaces the estimate; connections closing after it are taken off the count.
    state.open = 870;
    await g.recount();
    expect(g.use()?.used).toBe(870);
    conns[1]!.close();
    expect(g.use()?.used).toBe(869);
  });

  test('a count that fails for want of descriptors means all are in use', async () => {
    const { g, state } = gauge(1_000, 10, 100);
    state.open = 'exhausted';
    await g.recount();
    expect(g.use()?.used).toBe(1_000);
    expect(g.admitsAgent()).toBe(false);
    expect(g.admitsConnection()).toBe(false);
  });

  test('knows nothing, and admits everything, without /proc or without a limit', () => {
    const noProc = gauge(1_000, undefined, 100);
    expect(noProc.g.use()).toBeUndefined();
    expect(noProc.g.admitsAgent()).toBe(true);
    const unlimited = gauge(Infinity, 10);
    expect(unlimited.g.use()).toBeUndefined();
    expect(unlimited.g.admitsConnection()).toBe(true);
  });
});
