import { createHash, randomInt, timingSafeEqual } from 'node:crypto';

export const CODE_DIGITS = 6;

/** A random code of CODE_DIGITS decimal digits from the CSPRNG. */
export function newCode(): string {
  return String(randomInt(0, 10 ** CODE_DIGITS)).padStart(CODE_DIGITS, '0');
}

/**
 * The stored form of a code: SHA-256 over the login's session id and the code. The session id (a random UUID)
 * salts it, so one table of hashes does not serve every login; the code lives minutes and allows five tries, so a
 * slow hash would add nothing but latency.
 */
export function hashCode(sessionId: string, code: string): string {
  return createHash('sha256').update(`${sessionId}:${code}`).digest('hex');
}

/** Constant-time comparison of a code against its stored hash. */
export function codeMatches(sessionId: string, code: string, storedHash: string): boolean {
  const given = Buffer.from(hashCode(sessionId, code), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return given.length === stored.length && timingSafeEqual(given, stored);
}
