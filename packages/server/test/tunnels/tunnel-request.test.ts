import { describe, expect, test } from 'vitest';
import { parseDurationMs, parseTunnelRequest } from '../../src/core/tunnels/tunnel-request.js';

const parse = (query: Record<string, unknown>) => parseTunnelRequest(query);

/** The AppError items of a refused query. */
function problems(query: Record<string, unknown>): { code: string; title: string; detail: string }[] {
  try {
    parse(query);
  } catch (err) {
    return (err as { toItems(): { code: string; title: string; detail: string }[] }).toItems();
  }
  throw new Error('expected the query to be refused');
}

describe('parseTunnelRequest', () => {
  test('defaults: remote host 127.0.0.1, no local, no acl, idle 5 minutes, no auto-close, check_port on', () => {
    expect(parse({ remote: '22' })).toEqual({
      remote: { host: '127.0.0.1', port: 22 },
      local: undefined,
      acl: undefined,
      idleTimeoutMinutes: 5,
      autoCloseMs: undefined,
      checkPort: true,
      scheme: 'ssh',
    });
  });

  test('every parameter', () => {
    const request = parse({
      remote: 'db.internal:5432',
      local: '127.0.0.1:20001',
      acl: '10.0.0.0/8',
      'idle-timeout-minutes': '0',
      'auto-close': '2h30m',
      check_port: '0',
      scheme: 'postgres',
    });
    expect(request).toMatchObject({
      remote: { host: 'db.internal', port: 5432 },
      local: { host: '127.0.0.1', port: 20001 },
      acl: { text: '10.0.0.0/8' },
      idleTimeoutMinutes: 0,
      autoCloseMs: 9_000_000,
      checkPort: false,
      scheme: 'postgres',
    });
  });

  test('scheme: free text up to 15 characters; empty = none; absent = from a well-known remote port', () => {
    expect(parse({ remote: '22', scheme: 'fifteen-chars-x' }).scheme).toBe('fifteen-chars-x');
    expect(parse({ remote: '22', scheme: '' }).scheme).toBeNull();
    expect(parse({ remote: '8080', scheme: 'http' }).scheme).toBe('http');
    const derived = [22, 80, 443, 3389, 5900, 8080].map((port) => parse({ remote: String(port) }).scheme);
    expect(derived).toEqual(['ssh', 'http', 'https', 'rdp', 'vnc', null]);
  });

  test('a scheme over 15 characters is ERR_URI_SCHEME_TOO_LONG', () => {
    expect(problems({ remote: '22', scheme: 'sixteen-chars-xx' })).toEqual([
      {
        code: 'ERR_URI_SCHEME_TOO_LONG',
        title: 'Invalid URI scheme: scheme exceeds the max length of 15 characters',
        detail: expect.stringContaining('got 16 characters'),
      },
    ]);
    expect(problems({ remote: '22', scheme: ['ssh', 'rdp'] })[0]?.title).toBe('scheme must be given once');
  });

  test('IPv6 hosts in brackets; a bare local port listens on 0.0.0.0', () => {
    expect(parse({ remote: '[::1]:8080', local: '20002' })).toMatchObject({
      remote: { host: '::1', port: 8080 },
      local: { host: '0.0.0.0', port: 20002 },
    });
    expect(parse({ remote: '22', local: '[::]:20003' }).local).toEqual({ host: '::', port: 20003 });
  });

  test('skip-idle-timeout=true means never; false keeps the default', () => {
    expect(parse({ remote: '22', 'skip-idle-timeout': 'true' }).idleTimeoutMinutes).toBe(0);
    expect(parse({ remote: '22', 'skip-idle-timeout': 'false' }).idleTimeoutMinutes).toBe(5);
    expect(
      parse({ remote: '22', 'skip-idle-timeout': 'false', 'idle-timeout-minutes': '9' }).idleTimeoutMinutes,
    ).toBe(9);
  });

  test('auto-close=0 means never', () => {
    expect(parse({ remote: '22', 'auto-close': '0' }).autoCloseMs).toBeUndefined();
  });

  test.each([
    [{}, 'remote is required'],
    [{ remote: '' }, 'remote is required'],
    [{ remote: '0' }, 'remote port must be a number from 1 to 65535'],
    [{ remote: '70000' }, 'remote port must be a number from 1 to 65535'],
    [{ remote: 'abc' }, 'remote has no port'],
    [{ remote: '10.0.0.1' }, 'remote has no port'],
    [{ remote: 'host:abc' }, 'remote port must be a number from 1 to 65535'],
    [{ remote: 'host:' }, 'remote port must be a number from 1 to 65535'],
    [{ remote: '::1:22' }, 'remote must put an IPv6 address in brackets'],
    [{ remote: '[::1]' }, 'remote has no port'],
    [{ remote: '[example.com]:22' }, 'remote host must be an IPv6 address inside brackets'],
    [{ remote: 'bad_host!:22' }, 'remote host is not an IP address or host name'],
    [{ remote: '22', local: '127.0.0.1' }, 'local has no port'],
    [{ remote: '22', local: '0' }, 'local port must be a number from 1 to 65535'],
    [{ remote: '22', local: '127.0.0.1:70000' }, 'local port must be a number from 1 to 65535'],
    [
      { remote: '22', 'idle-timeout-minutes': '10081' },
      'idle-timeout-minutes must be a whole number from 0 to 10080 (7 days)',
    ],
    [
      { remote: '22', 'idle-timeout-minutes': '-1' },
      'idle-timeout-minutes must be a whole number from 0 to 10080 (7 days)',
    ],
    [
      { remote: '22', 'idle-timeout-minutes': '1.5' },
      'idle-timeout-minutes must be a whole number from 0 to 10080 (7 days)',
    ],
    [
      { remote: '22', 'idle-timeout-minutes': '5', 'skip-idle-timeout': 'true' },
      'idle-timeout-minutes and skip-idle-timeout=true conflict',
    ],
    [{ remote: '22', 'skip-idle-timeout': 'yes' }, 'skip-idle-timeout must be true or false'],
    [{ remote: '22', 'auto-close': '32d' }, 'auto-close must be a duration from 0 to 31d'],
    [{ remote: '22', 'auto-close': '90' }, 'auto-close must be a duration from 0 to 31d'],
    [{ remote: '22', 'auto-close': 'soon' }, 'auto-close must be a duration from 0 to 31d'],
    [{ remote: '22', check_port: 'maybe' }, 'check_port must be true or false'],
    [{ remote: '22', protocol: 'udp' }, 'Unknown query parameter protocol'],
    [{ remote: ['22', '23'] }, 'remote must be given once'],
  ])('%j is refused: %s', (query, title) => {
    const [first] = problems(query);
    expect(first?.title).toBe(title);
    expect(first?.code).toBe('ERR_INVALID_QUERY');
  });

  test('a bad acl is ERR_INVALID_ACL', () => {
    expect(problems({ remote: '22', acl: '0.0.0.0' })[0]).toMatchObject({
      code: 'ERR_INVALID_ACL',
      title: expect.stringMatching(/^Invalid ACL/),
    });
  });

  test('every problem is reported at once', () => {
    const items = problems({ remote: '0', local: 'x', acl: 'nope', 'auto-close': 'later' });
    expect(items.map((item) => item.code)).toEqual([
      'ERR_INVALID_QUERY',
      'ERR_INVALID_QUERY',
      'ERR_INVALID_ACL',
      'ERR_INVALID_QUERY',
    ]);
  });
});

describe('parseDurationMs', () => {
  test.each([
    ['0', 0],
    ['90s', 90_000],
    ['1m', 60_000],
    ['2h30m', 9_000_000],
    ['1d', 86_400_000],
    ['500ms', 500],
    ['1.5s', 1500],
  ])('%s = %i ms', (text, ms) => {
    expect(parseDurationMs(text)).toBe(ms);
  });

  test.each(['', '90', 's', '1x', '1h 30m', '-1s'])('%j is not a duration', (text) => {
    expect(parseDurationMs(text)).toBeUndefined();
  });
});
