import { describe, expect, test } from 'vitest';
import { addressKey } from '../../src/http/address-key.js';
import { ConnectionShares } from '../../src/http/connection-shares.js';

class Conn {
  destroyed = false;
  constructor(readonly name: string) {}
  destroy(): void {
    this.destroyed = true;
  }
}

describe('addressKey', () => {
  test('IPv4 as is, IPv4-mapped IPv6 as IPv4, IPv6 by its /64', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:0db8:0001:0002:ffff:1:2:3')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });
});

describe('ConnectionShares', () => {
  test('an address holds at most perAddress; others are not affected', () => {
    const shares = new ConnectionShares<Conn>({ maxConnections: 0, perAddress: 2 });
    expect(shares.admit(new Conn('a1'), 'a')).toEqual({});
    const a2 = new Conn('a2');
    expect(shares.admit(a2, 'a')).toEqual({});
    expect(shares.admit(new Conn('a3'), 'a')).toEqual({ refused: 'address_share' });
    expect(shares.admit(new Conn('b1'), 'b')).toEqual({});
    shares.release(a2, 'a');
    shares.release(a2, 'a');
    expect(shares.open).toBe(2);
    expect(shares.admit(new Conn('a4'), 'a')).toEqual({});
  });

  test('when full, the address holding the most gives up its oldest to a newcomer holding fewer', () => {
    const shares = new ConnectionShares<Conn>({ maxConnections: 4, perAddress: 0 });
    const a = [1, 2, 3].map((i) => new Conn(`a${i}`));
    for (const c of a) shares.admit(c, 'a');
    shares.admit(new Conn('b1'), 'b');
    expect(shares.admit(new Conn('c1'), 'c')).toEqual({ evictedFrom: 'a' });
    expect(a.map((c) => c.destroyed)).toEqual([true, false, false]);
    expect(shares.open).toBe(4);
    // Now a holds 2, b and c 1 each: a newcomer from b would hold 2, no more than a; it is refused.
    expect(shares.admit(new Conn('b2'), 'b')).toEqual({ refused: 'full' });
    expect(shares.admit(new Conn('a4'), 'a')).toEqual({ refused: 'full' });
    expect(shares.admit(new Conn('d1'), 'd')).toEqual({ evictedFrom: 'a' });
    expect(a.map((c) => c.destroyed)).toEqual([true, true, false]);
  });
});
