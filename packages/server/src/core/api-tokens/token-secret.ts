import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { API_TOKEN_PREFIX_LENGTH } from '@svc/protocol';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const SECRET_BYTES = 32;
/** `<8 letters or digits>_<43 base64url characters>`: what a token looks like on the wire. */
const TOKEN_SHAPE = new RegExp(`^([A-Za-z0-9]{${API_TOKEN_PREFIX_LENGTH}})_([A-Za-z0-9_-]{43})$`);

export interface NewTokenSecret {
  prefix: string;
  /** The whole token as the user sends it: `<prefix>_<secret>`. */
  token: string;
  secretHash: string;
}

export function newPrefix(): string {
  let prefix = '';
  for (let i = 0; i < API_TOKEN_PREFIX_LENGTH; i++) prefix += ALPHANUMERIC[randomInt(ALPHANUMERIC.length)];
  return prefix;
}

/**
 * The secret is 32 random bytes (256 bits), so its plain SHA-256 is enough to store: nobody can search a space
 * that size, so a slow password hash (bcrypt) would add nothing but a bcrypt per request. No server key is
 * involved either, so tokens survive a new jwt_secret and work on every node sharing the database.
 */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function newTokenSecret(prefix: string = newPrefix()): NewTokenSecret {
  const secret = randomBytes(SECRET_BYTES).toString('base64url');
  return { prefix, token: `${prefix}_${secret}`, secretHash: hashSecret(secret) };
}

/** Splits a Basic password that has the shape of an API token; undefined for anything else (a password). */
export function parseToken(password: string): { prefix: string; secret: string } | undefined {
  const match = TOKEN_SHAPE.exec(password);
  if (!match?.[1] || !match[2]) return undefined;
  return { prefix: match[1], secret: match[2] };
}

/** Constant-time comparison of a presented secret with the stored hash. */
export function secretMatches(secret: string, secretHash: string): boolean {
  const presented = Buffer.from(hashSecret(secret), 'hex');
  const stored = Buffer.from(secretHash, 'hex');
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}
