import { createHash } from 'node:crypto';

const PREFIX_FORM = /^[0-9a-f]{2}(?::[0-9a-f]{2}){0,15}$/;

/** MD5 of an SSH public key blob in colon hex, as svcd publishes it in GET /status. */
export function md5Fingerprint(keyBlob: Buffer): string {
  const hex = createHash('md5').update(keyBlob).digest('hex');
  return hex.replace(/(..)(?!$)/g, '$1:');
}

/**
 * Checks and normalises a configured fingerprint: the MD5 colon-hex form or a prefix of it (whole bytes),
 * any case. Returns it lower-cased.
 */
export function parseFingerprint(text: string): string {
  const value = text.trim().toLowerCase();
  if (/^sha256:/.test(value))
    throw new Error('use the MD5 fingerprint in colon hex (as GET /status shows it), not a SHA256 one');
  if (!PREFIX_FORM.test(value))
    throw new Error(
      `fingerprint ${JSON.stringify(text)} must be MD5 colon hex such as ` +
        '5d:b3:ee:37:b2:31:cc:ce:93:d4:69:21:16:5d:36:11, or its start (whole bytes)',
    );
  return value;
}

/** True when the actual fingerprint starts with the expected one (case-insensitive); no expectation accepts any. */
export function fingerprintMatches(actual: string, expected: string | undefined): boolean {
  if (expected === undefined || expected === '') return true;
  return actual.toLowerCase().startsWith(expected.toLowerCase());
}
