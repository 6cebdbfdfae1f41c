import { describe, expect, test } from 'vitest';
import { tokenExpiry, tokenIssuedAt } from '../src/lib/jwt.js';
import { allows, cleanGroups, isAdministrator, visiblePages } from '../src/lib/rights.js';
import { expiryFor, generatePassword, isExpired, passwordProblem } from '../src/lib/secrets.js';
import { RENEW_BEFORE_MS, renewalTime } from '../src/session/renewal.js';
import { describeTwoFa } from '../src/lib/two-fa.js';

const PAGES = [
  { to: '/', label: 'Dashboard' },
  { to: '/users', label: 'Users', admin: true },
  { to: '/tokens', label: 'API tokens' },
  { to: '/credentials', label: 'Client credentials', admin: true },
  { to: '/audit', label: 'Audit log', permission: 'auditlog' as const },
];

describe('rights', () => {
  test('admin-only menu lines only for members of Administrators, none before /me answers', () => {
    const to = (groups: string[] | undefined) =>
      visiblePages(PAGES, groups ? { groups } : undefined).map((p) => p.to);
    expect(to(['Administrators'])).toEqual(['/', '/users', '/tokens', '/credentials', '/audit']);
    expect(to(['Operators', 'administrators'])).toEqual(['/', '/tokens']);
    expect(to([])).toEqual(['/', '/tokens']);
    expect(to(undefined)).toEqual(['/', '/tokens']);
    expect(isAdministrator(['Ops', 'Administrators'])).toBe(true);
    expect(isAdministrator(undefined)).toBe(false);
  });

  test('pages and actions of a permission only for those whose groups grant it', () => {
    const to = (me: Parameters<typeof visiblePages>[1]) => visiblePages(PAGES, me).map((p) => p.to);
    expect(to({ groups: ['Ops'], effective_user_permissions: { auditlog: true } })).toEqual([
      '/',
      '/tokens',
      '/audit',
    ]);
    expect(to({ groups: ['Ops'], effective_user_permissions: { auditlog: false } })).toEqual([
      '/',
      '/tokens',
    ]);
    expect(allows({ groups: ['Ops'], effective_user_permissions: { vault: true } }, 'vault')).toBe(true);
    expect(allows({ groups: ['Ops'], effective_user_permissions: {} }, 'vault')).toBe(false);
    expect(allows({ groups: ['Administrators'] }, 'vault')).toBe(true);
    expect(allows(undefined, 'vault')).toBe(false);
  });

  test('groups typed in the tags input are trimmed, de-duplicated and keep their order', () => {
    expect(cleanGroups([' Ops', 'Administrators', 'Ops ', '', '  ', 'ops'])).toEqual([
      'Ops',
      'Administrators',
      'ops',
    ]);
  });
});

describe('secrets', () => {
  test('generated passwords have the length asked for, from the alphabet without look-alikes', () => {
    const password = generatePassword();
    expect(password).toHaveLength(24);
    expect(password).toMatch(/^[A-HJ-NP-Za-km-z2-9]+$/);
    expect(generatePassword(40)).toHaveLength(40);
    expect(generatePassword()).not.toBe(password);
  });

  test('bytes beyond the last whole alphabet round are skipped, not folded onto the first letters', () => {
    // 57 letters: 256 - 256 % 57 = 228; 228..255 would make the first 28 letters likelier.
    let calls = 0;
    const password = generatePassword(4, (bytes) => {
      calls += 1;
      bytes.fill(calls === 1 ? 250 : 1);
    });
    expect(calls).toBe(2);
    expect(password).toBe('BBBB');
  });

  test('token expiry: days from now, or the end of a chosen future day, as RFC 3339', () => {
    const now = Date.parse('2026-03-01T10:00:00.250Z');
    expect(expiryFor('30', '', now)).toBe('2026-03-31T10:00:00Z');
    expect(expiryFor('365', '', now)).toBe('2027-03-01T10:00:00Z');
    const onDate = expiryFor('date', '2026-04-15', now);
    expect(onDate).toMatch(/^2026-04-1[56]T\d\d:59:59Z$/);
    expect(new Date(onDate ?? '').getTime()).toBe(new Date(2026, 3, 15, 23, 59, 59).getTime());
    expect(expiryFor('date', '2026-02-01', now)).toBeUndefined();
    expect(expiryFor('date', '15.04.2026', now)).toBeUndefined();
    expect(expiryFor('date', '', now)).toBeUndefined();
    expect(expiryFor('0', '', now)).toBeUndefined();
    expect(expiryFor('soon', '', now)).toBeUndefined();
    expect(isExpired('2026-03-01T09:59:59Z', now)).toBe(true);
    expect(isExpired('2026-03-01T10:00:01Z', now)).toBe(false);
  });

  test('a new password: long enough, at most 72 bytes, typed twice alike', () => {
    expect(passwordProblem('short', 'short')).toMatch(/at least 8/);
    expect(passwordProblem('é'.repeat(37), 'é'.repeat(37))).toMatch(/72 bytes/);
    expect(passwordProblem('long-enough-1', 'long-enough-2')).toMatch(/differ/);
    expect(passwordProblem('long-enough-1', 'long-enough-1')).toBeUndefined();
  });
});

describe('session renewal', () => {
  test('two minutes before the end, or halfway through a token shorter than four minutes', () => {
    const issuedAt = 1_000_000;
    expect(renewalTime({ issuedAt, expiresAt: issuedAt + 8 * 3_600_000 })).toBe(
      issuedAt + 8 * 3_600_000 - RENEW_BEFORE_MS,
    );
    expect(renewalTime({ issuedAt, expiresAt: issuedAt + 30_000 })).toBe(issuedAt + 15_000);
    expect(renewalTime({ expiresAt: issuedAt + 30_000 })).toBe(issuedAt + 30_000 - RENEW_BEFORE_MS);
  });

  test('the times of a JWT come from its iat and exp claims', () => {
    const payload = Buffer.from(
      JSON.stringify({ sub: 'a', iat: 1_700_000_000, exp: 1_700_000_600 }),
    ).toString('base64url');
    const token = `eyJhbGciOiJIUzI1NiJ9.${payload}.sig`;
    expect(tokenIssuedAt(token)).toBe(1_700_000_000_000);
    expect(tokenExpiry(token)).toBe(1_700_000_600_000);
    expect(tokenIssuedAt('not-a-jwt')).toBeUndefined();
  });
});

describe("a user's second factor in the users list", () => {
  test('on with its method in words, off when not set up, none when svcd has no second factor', () => {
    expect(describeTwoFa({ enabled: true, method: 'totp_authenticator_app' })).toEqual({
      level: 'on',
      text: 'authenticator app',
    });
    expect(describeTwoFa({ enabled: false, method: 'totp_authenticator_app' })).toEqual({
      level: 'off',
      text: 'authenticator app not set up',
    });
    expect(describeTwoFa({ enabled: true, method: 'smtp' }).text).toBe('code by e-mail');
    expect(describeTwoFa({ enabled: false, method: 'pushover' })).toEqual({
      level: 'off',
      text: 'code by Pushover: no address',
    });
    expect(describeTwoFa({ enabled: true, method: 'carrier-pigeon' }).text).toBe('carrier-pigeon');
    expect(describeTwoFa({ enabled: false, method: null })).toEqual({
      level: 'none',
      text: 'off on this server',
    });
    expect(describeTwoFa(undefined).level).toBe('none');
  });
});
