import { describe, expect, test } from 'vitest';
import { aclAllows, parseAcl } from '../../src/core/tunnels/acl.js';
import { parseIp } from '../../src/core/tunnels/ip-address.js';

describe('parseIp', () => {
  test.each([
    ['192.0.2.1', 4],
    ['0.0.0.0', 4],
    ['::', 6],
    ['::1', 6],
    ['2001:db8::8a2e:370:7334', 6],
    ['2001:0db8:0000:0000:0000:ff00:0042:8329', 6],
    ['fe80::', 6],
    ['64:ff9b::192.0.2.33', 6],
    ['::ffff:10.1.2.3', 4],
  ])('%s is IPv%i', (text, family) => {
    expect(parseIp(text)?.family).toBe(family);
  });

  test.each([
    '',
    '1.2.3',
    '1.2.3.4.5',
    '256.1.1.1',
    '01.2.3.4',
    '1.2.3.4/8',
    'a.b.c.d',
    ':::',
    '1::2::3',
    '12345::',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7',
    'fe80::1%eth0',
    'g::1',
    '::1.2.3',
    'localhost',
  ])('%j is not an address', (text) => {
    expect(parseIp(text)).toBeUndefined();
  });

  test('IPv4-mapped IPv6 addresses become IPv4', () => {
    expect(parseIp('::ffff:192.0.2.1')).toEqual(parseIp('192.0.2.1'));
  });
});

describe('parseAcl and aclAllows', () => {
  test('single addresses and CIDRs of both families', () => {
    const acl = parseAcl(' 192.0.2.7 , 10.0.0.0/8,2001:db8::/32, ::1');
    expect(acl.text).toBe('192.0.2.7,10.0.0.0/8,2001:db8::/32,::1');
    expect(aclAllows(acl, '192.0.2.7')).toBe(true);
    expect(aclAllows(acl, '192.0.2.8')).toBe(false);
    expect(aclAllows(acl, '10.255.1.2')).toBe(true);
    expect(aclAllows(acl, '11.0.0.1')).toBe(false);
    expect(aclAllows(acl, '::ffff:10.0.0.1')).toBe(true);
    expect(aclAllows(acl, '2001:db8:ffff::1')).toBe(true);
    expect(aclAllows(acl, '2001:db9::1')).toBe(false);
    expect(aclAllows(acl, '::1')).toBe(true);
    expect(aclAllows(acl, '127.0.0.1')).toBe(false);
    expect(aclAllows(acl, 'garbage')).toBe(false);
  });

  test('prefixes that do not end on a byte boundary, and host bits set in the CIDR', () => {
    const acl = parseAcl('192.0.2.130/25,2001:db8:8000::/33');
    expect(aclAllows(acl, '192.0.2.128')).toBe(true);
    expect(aclAllows(acl, '192.0.2.255')).toBe(true);
    expect(aclAllows(acl, '192.0.2.127')).toBe(false);
    expect(aclAllows(acl, '2001:db8:8000::1')).toBe(true);
    expect(aclAllows(acl, '2001:db8:7fff::1')).toBe(false);
  });

  test('/0 of one family does not match the other', () => {
    const acl = parseAcl('1.0.0.0/0');
    expect(aclAllows(acl, '203.0.113.9')).toBe(true);
    expect(aclAllows(acl, '2001:db8::1')).toBe(false);
  });

  test.each([
    ['0.0.0.0', /0\.0\.0\.0 and :: are not accepted/],
    ['::', /0\.0\.0\.0 and :: are not accepted/],
    ['0.0.0.0/0', /not accepted/],
    ['10.0.0.0/33', /prefix length must be 0-32/],
    ['2001:db8::/129', /prefix length must be 0-128/],
    ['10.0.0.0/', /prefix length/],
    ['10.0.0.0/x', /prefix length/],
    ['example.com', /not an IPv4\/IPv6 address or CIDR/],
    ['1.2.3.4,,5.6.7.8', /entry is empty/],
    ['1.2.3.4,', /entry is empty/],
    ['300.1.1.1', /not an IPv4\/IPv6 address/],
  ])('%j is refused with ERR_INVALID_ACL', (text, detail) => {
    expect(() => parseAcl(text)).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ACL', detail: expect.stringMatching(detail) }),
    );
  });
});
