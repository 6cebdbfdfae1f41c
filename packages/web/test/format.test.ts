import { expect, test } from 'vitest';
import { apiErrorOf, secondsLeft } from '../src/api/api-error.js';
import { formatBytes, formatDuration, formatExact, formatRelative } from '../src/lib/format.js';
import { tokenExpiry } from '../src/lib/jwt.js';

test('sizes in binary units', () => {
  expect(formatBytes(512)).toBe('512 B');
  expect(formatBytes(1536)).toBe('1.5 KiB');
  expect(formatBytes(16 * 1024 ** 3)).toBe('16 GiB');
});

test('durations show the two largest parts', () => {
  expect(formatDuration(800)).toBe('800 ms');
  expect(formatDuration(62_000)).toBe('1 min 2 s');
  expect(formatDuration(2 * 86_400_000 + 3 * 3_600_000 + 5_000)).toBe('2 d 3 h');
  expect(formatDuration(3_600_000)).toBe('1 h');
});

test('relative times, past and future', () => {
  const now = Date.parse('2026-01-01T12:00:00Z');
  expect(formatRelative('2026-01-01T11:57:00Z', now)).toBe('3 min ago');
  expect(formatRelative('2026-01-01T14:00:00Z', now)).toBe('in 2 h');
  expect(formatRelative('2026-01-01T11:59:55Z', now)).toBe('just now');
  expect(formatRelative('not a time', now)).toBe('not a time');
});

test('exact times in a given zone name the zone', () => {
  expect(formatExact('2026-01-01T12:00:00Z', 'UTC')).toMatch(/12:00:00.*UTC/);
});

test('API errors keep the title and detail; a ban gives the seconds left', () => {
  const ban = apiErrorOf(423, {
    errors: [{ code: 'ERR_IP_BANNED', title: 'Too many failed logins', detail: 'try again in 42 s' }],
  });
  expect(ban.message).toBe('Too many failed logins: try again in 42 s');
  expect(secondsLeft(ban)).toBe(42);
  const odd = apiErrorOf(502, '<html>bad gateway</html>');
  expect(odd.title).toBe('The server answered 502');
  expect(secondsLeft(odd)).toBeUndefined();
});

test("a token's expiry comes from its exp claim", () => {
  const payload = Buffer.from(JSON.stringify({ exp: 1_800_000_000, sub: 'admin' })).toString('base64url');
  expect(tokenExpiry(`eyJhbGciOiJIUzI1NiJ9.${payload}.sig`)).toBe(1_800_000_000_000);
  expect(tokenExpiry('garbage')).toBeUndefined();
});
