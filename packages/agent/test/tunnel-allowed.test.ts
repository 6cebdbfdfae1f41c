import { describe, expect, test, vi } from 'vitest';
import { TunnelAllowList, parseAllowEntry } from '../src/tunnels/tunnel-allowed.js';

const list = (patterns: string[], resolve?: (host: string) => Promise<string[]>) =>
  new TunnelAllowList(patterns, resolve);

describe('parseAllowEntry', () => {
  test.each([
    ['10.0.0.1', undefined],
    ['10.0.0.0/8', undefined],
    ['10.0.0.1:22', 22],
    ['10.0.0.0/8:22', 22],
    [':443', 443],
    ['443', 443],
    ['::1', undefined],
    ['fd00::/8', undefined],
    ['[::1]:22', 22],
    ['[fd00::/8]:22', 22],
    ['[::1]', undefined],
    [' 10.0.0.1 ', undefined],
  ])('%j has port %s', (entry, port) => {
    expect(parseAllowEntry(entry).port).toBe(port);
  });

  test.each([
    ['', /unsupported form/],
    ['example.com', /unsupported form/],
    ['example.com:22', /not an IP address/],
    ['10.0.0.1:0', /port must be 1-65535/],
    ['10.0.0.1:65536', /port must be 1-65535/],
    [':http', /port must be 1-65535/],
    ['0', /port must be 1-65535/],
    ['10.0.0.0/33', /prefix length must be 0-32/],
    ['fd00::/129', /prefix length must be 0-128/],
    ['10.0.0.0/x', /prefix length/],
    ['300.0.0.1', /unsupported form/],
    ['[::1]:x', /port must be/],
  ])('refuses %j', (entry, message) => {
    expect(() => parseAllowEntry(entry)).toThrow(message);
  });
});

describe('TunnelAllowList', () => {
  test('an empty list allows everything without resolving', async () => {
    const resolve = vi.fn(() => Promise.resolve(['1.2.3.4']));
    const allowList = list([], resolve);
    expect(allowList.allowsEverything).toBe(true);
    expect(await allowList.allows('anything.example', 1)).toBe(true);
    expect(resolve).not.toHaveBeenCalled();
  });

  test('IP and CIDR entries allow any port; entries with a port only that port', () => {
    const allowList = list(['192.168.1.10', '10.0.0.0/8:22', ':443', '8080']);
    expect(allowList.allowsAddress('192.168.1.10', 5432)).toBe(true);
    expect(allowList.allowsAddress('192.168.1.11', 5432)).toBe(false);
    expect(allowList.allowsAddress('10.20.30.40', 22)).toBe(true);
    expect(allowList.allowsAddress('10.20.30.40', 23)).toBe(false);
    expect(allowList.allowsAddress('8.8.8.8', 443)).toBe(true);
    expect(allowList.allowsAddress('2001:db8::1', 8080)).toBe(true);
    expect(allowList.allowsAddress('8.8.8.8', 80)).toBe(false);
  });

  test('IPv6 entries, and IPv4-mapped IPv6 addresses match IPv4 entries', () => {
    const allowList = list(['fd00::/8', '[::1]:22', '127.0.0.0/8']);
    expect(allowList.allowsAddress('fd12::5', 1)).toBe(true);
    expect(allowList.allowsAddress('fe80::1', 1)).toBe(false);
    expect(allowList.allowsAddress('::1', 22)).toBe(true);
    expect(allowList.allowsAddress('::1', 23)).toBe(false);
    expect(allowList.allowsAddress('::ffff:127.0.0.1', 80)).toBe(true);
    expect(allowList.allowsAddress('127.0.0.1', 80)).toBe(true);
  });

  test('an IP literal host is checked without resolving, also in brackets', async () => {
    const resolve = vi.fn(() => Promise.resolve([]));
    const allowList = list(['127.0.0.1', '::1'], resolve);
    expect(await allowList.allows('127.0.0.1', 80)).toBe(true);
    expect(await allowList.allows('[::1]', 80)).toBe(true);
    expect(await allowList.allows('127.0.0.2', 80)).toBe(false);
    expect(resolve).not.toHaveBeenCalled();
  });

  test('every resolved address must match', async () => {
    const addresses: Record<string, string[]> = {
      'inside.example': ['10.0.0.5', '10.0.0.6'],
      'mixed.example': ['10.0.0.5', '8.8.8.8'],
    };
    const allowList = list(['10.0.0.0/24'], (host) => Promise.resolve(addresses[host] ?? []));
    expect(await allowList.allows('inside.example', 80)).toBe(true);
    expect(await allowList.allows('mixed.example', 80)).toBe(false);
    expect(await allowList.allows('nothing.example', 80)).toBe(false);
  });

  test('a host that does not resolve is not allowed', async () => {
    const allowList = list(['0.0.0.0/0'], () => Promise.reject(new Error('ENOTFOUND')));
    expect(await allowList.allows('missing.invalid', 80)).toBe(false);
  });

  test('the system resolver resolves localhost', async () => {
    const allowList = list(['127.0.0.0/8', '::1']);
    expect(await allowList.allows('localhost', 80)).toBe(true);
  });

  test('a bad pattern throws when the list is built', () => {
    expect(() => list(['10.0.0.1', 'nonsense'])).toThrow(/"nonsense"/);
  });
});
