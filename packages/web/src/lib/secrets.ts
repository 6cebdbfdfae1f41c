/** Small helpers for secrets the console creates or shows once. */

const ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';

/**
 * A random password from the browser's CSPRNG: 24 characters of a 57-letter alphabet without look-alikes
 * (about 140 bits). Rejection sampling keeps every letter equally likely.
 */
export function generatePassword(length = 24, random: (bytes: Uint8Array) => void = fill): string {
  const limit = 256 - (256 % ALPHABET.length);
  let out = '';
  const buffer = new Uint8Array(length * 2);
  while (out.length < length) {
    random(buffer);
    for (const byte of buffer) {
      if (byte < limit && out.length < length) out += ALPHABET[byte % ALPHABET.length];
    }
  }
  return out;
}

function fill(bytes: Uint8Array): void {
  crypto.getRandomValues(bytes);
}

/** Expiry choices for a new API token, in days; `never` is not offered (svcd's default is one year). */
export const TOKEN_EXPIRY_CHOICES = [
  { value: '7', label: '7 days' },
  { value: '30', label: '30 days' },
  { value: '90', label: '90 days' },
  { value: '365', label: '1 year' },
  { value: 'date', label: 'On a date…' },
] as const;

/**
 * The `expires_at` for a choice: `days` from `now`, or the end of the chosen day (`YYYY-MM-DD`) in the
 * browser's zone, as RFC 3339 UTC. Undefined when the date is missing, malformed or not in the future.
 */
export function expiryFor(choice: string, date: string, now: number): string | undefined {
  if (choice === 'date') {
    const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
    if (!match) return undefined;
    const end = new Date(Number(match[1]), Number(match[2]) - 1, Number(match[3]), 23, 59, 59);
    if (Number.isNaN(end.getTime()) || end.getTime() <= now) return undefined;
    return end.toISOString().replace(/\.\d{3}Z$/, 'Z');
  }
  const days = Number(choice);
  if (!Number.isInteger(days) || days <= 0) return undefined;
  return new Date(now + days * 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Whether a token's `expires_at` has passed. */
export const isExpired = (iso: string, now: number): boolean => Date.parse(iso) <= now;

/** The form checks of a new password, in the words the page shows (svcd checks again). */
export function passwordProblem(password: string, confirm: string): string | undefined {
  if (password.length < 8) return 'The new password needs at least 8 characters.';
  if (new TextEncoder().encode(password).length > 72) return 'The new password is longer than 72 bytes.';
  if (password !== confirm) return 'The two new passwords differ.';
  return undefined;
}
