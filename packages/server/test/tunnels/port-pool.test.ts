import { describe, expect, test } from 'vitest';
import { PortPool } from '../../src/core/tunnels/port-pool.js';

describe('PortPool', () => {
  test('used_ports minus excluded_ports, ranges merged', () => {
    const pool = new PortPool(['20000-20009', '20005-20012', '30000'], ['20003-20004', '20010', '1-1024']);
    expect(pool.describe()).toBe('20000-20002,20005-20009,20011-20012,30000');
    expect(pool.size).toBe(3 + 5 + 2 + 1);
    expect(pool.has(20000)).toBe(true);
    expect(pool.has(20003)).toBe(false);
    expect(pool.has(20010)).toBe(false);
    expect(pool.has(30000)).toBe(true);
    expect(pool.has(1000)).toBe(false);
  });

  test('the default pool', () => {
    const pool = new PortPool(['20000-30000'], ['1-1024']);
    expect(pool.size).toBe(10001);
    expect(pool.describe()).toBe('20000-30000');
  });

  test('excluding everything leaves an empty pool', () => {
    const pool = new PortPool(['100-200'], ['1-1024']);
    expect(pool.size).toBe(0);
    expect(pool.describe()).toBe('(empty)');
    expect([...pool.candidates(new Set())]).toEqual([]);
  });

  test('candidates visit every free port once, from a random start, wrapping around', () => {
    const pool = new PortPool(['10-12', '20-21'], []);
    expect([...pool.candidates(new Set(), () => 0)]).toEqual([10, 11, 12, 20, 21]);
    expect([...pool.candidates(new Set(), () => 0.7)]).toEqual([20, 21, 10, 11, 12]);
    expect([...pool.candidates(new Set([11, 20]), () => 0.99)]).toEqual([21, 10, 12]);
    const seen = [...pool.candidates(new Set())];
    expect([...seen].sort((a, b) => a - b)).toEqual([10, 11, 12, 20, 21]);
  });

  test('all taken: no candidate', () => {
    const pool = new PortPool(['5000-5001'], []);
    expect([...pool.candidates(new Set([5000, 5001]))]).toEqual([]);
  });
});
