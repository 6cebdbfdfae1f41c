import { expect, test } from 'vitest';
import { LogThrottle } from '../../src/core/log-throttle.js';

test('one event per key and interval; the next one counts those held back', () => {
  let now = 0;
  const throttle = new LogThrottle(60_000, 10, () => now);
  expect(throttle.admit('10.0.0.1')).toBe(0);
  expect(throttle.admit('10.0.0.1')).toBeUndefined();
  expect(throttle.admit('10.0.0.2')).toBe(0);
  now = 59_999;
  expect(throttle.admit('10.0.0.1')).toBeUndefined();
  now = 60_000;
  expect(throttle.admit('10.0.0.1')).toBe(2);
  expect(throttle.admit('10.0.0.1')).toBeUndefined();
});

test('remembers at most maxKeys keys, forgetting the one whose window opened first', () => {
  let now = 0;
  const throttle = new LogThrottle(60_000, 2, () => now);
  throttle.admit('a');
  now = 1;
  throttle.admit('b');
  now = 2;
  throttle.admit('c');
  // 'a' was forgotten, so it is let through again; 'c' is still remembered.
  expect(throttle.admit('a')).toBe(0);
  expect(throttle.admit('c')).toBeUndefined();
});
