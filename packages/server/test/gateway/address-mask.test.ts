import { describe, expect, test } from 'vitest';
import { maskAddress } from '../../src/core/clients/address-mask.js';

describe('maskAddress', () => {
  test.each([
    ['203.0.113.7', 51234, '203.0.113.x:51234'],
    ['::ffff:203.0.113.7', 40000, '203.0.113.x:40000'],
    ['2001:db8::1', 51234, '[2001:db8::x]:51234'],
    ['2001:db8:0:0:1:2:3:4', 1, '[2001:db8:0:0:1:2:3:x]:1'],
    ['fe80::1%eth0', 22, '[fe80::x]:22'],
    ['::1', 8080, '[::x]:8080'],
    ['10.1.2.3', undefined, '10.1.2.x'],
    ['', 0, 'unknown'],
  ])('%s port %s → %s', (ip, port, masked) => {
    expect(maskAddress(ip, port)).toBe(masked);
  });
});
