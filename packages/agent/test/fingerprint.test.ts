import { createHash } from 'node:crypto';
import { expect, test } from 'vitest';
import { fingerprintMatches, md5Fingerprint, parseFingerprint } from '../src/connection/fingerprint.js';

const FULL = '5d:b3:ee:37:b2:31:cc:ce:93:d4:69:21:16:5d:36:11';

test('md5Fingerprint is MD5 of the key blob in lower-case colon hex', () => {
  const blob = Buffer.from('any ssh key blob');
  const hex = createHash('md5').update(blob).digest('hex');
  const fp = md5Fingerprint(blob);
  expect(fp).toMatch(/^[0-9a-f]{2}(:[0-9a-f]{2}){15}$/);
  expect(fp.replaceAll(':', '')).toBe(hex);
});

test('a configured fingerprint matches when the actual one starts with it, in any case', () => {
  expect(fingerprintMatches(FULL, FULL)).toBe(true);
  expect(fingerprintMatches(FULL, '5d:b3:ee')).toBe(true);
  expect(fingerprintMatches(FULL, '5D:B3:EE:37')).toBe(true);
  expect(fingerprintMatches(FULL.toUpperCase(), '5d:b3')).toBe(true);
  expect(fingerprintMatches(FULL, '5d:b3:ef')).toBe(false);
  expect(fingerprintMatches(FULL, 'b3:ee')).toBe(false);
  expect(fingerprintMatches(FULL, `${FULL}:00`)).toBe(false);
});

test('no configured fingerprint accepts any key', () => {
  expect(fingerprintMatches(FULL, undefined)).toBe(true);
  expect(fingerprintMatches(FULL, '')).toBe(true);
});

test('parseFingerprint accepts the full form or whole-byte prefixes and lower-cases them', () => {
  expect(parseFingerprint(FULL)).toBe(FULL);
  expect(parseFingerprint(' 5D:B3:EE ')).toBe('5d:b3:ee');
  expect(parseFingerprint('5d')).toBe('5d');
});

test.each(['', '5', '5d:b', '5db3ee', '5d-b3-ee', 'zz:b3', `${FULL}:00`, '5d:b3:'])(
  'parseFingerprint refuses %j',
  (bad) => {
    expect(() => parseFingerprint(bad)).toThrow(/MD5 colon hex/);
  },
);

test('parseFingerprint explains that SHA256 fingerprints are not the published form', () => {
  expect(() => parseFingerprint('SHA256:abcdef')).toThrow(/MD5 fingerprint/);
});
