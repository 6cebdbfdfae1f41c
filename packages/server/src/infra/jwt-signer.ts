import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import type { TokenClaims, TokenSigner } from '../core/auth/ports.js';
import { BoundedMap } from '../core/bounded-map.js';

const ISSUER = 'svcd';

/**
 * Verified tokens are remembered by their exact text, up to this many (the oldest is forgotten, and verified again
 * if it returns). A signature stays valid until the token expires, so a token seen again skips the HMAC and the
 * JSON parsing (a quarter of a /status request's CPU); expiry is still checked on every use, and revocation is
 * the session check's job.
 */
const VERIFIED_TOKENS = 10_000;
const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');

interface Payload {
  iss?: unknown;
  sub?: unknown;
  sid?: unknown;
  iat?: unknown;
  exp?: unknown;
  tfa?: unknown;
}

const parseJson = (part: string): unknown => {
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
};

/**
 * JWT HS256 with the algorithm pinned: the header must be exactly the one svcd writes, so `alg: none` or a
 * switched algorithm is refused. Signing and checking use node:crypto synchronously: a check costs microseconds and, unlike WebCrypto,
 * never waits behind bcrypt on libuv's thread pool.
 */
export function createJwtSigner(secret: string, now: () => number = Date.now): TokenSigner {
  const key = createSecretKey(Buffer.from(secret, 'utf8'));
  const verified = new BoundedMap<string, TokenClaims>(VERIFIED_TOKENS);
  const sign = (input: string): Buffer => createHmac('sha256', key).update(input).digest();
  return {
    sign(claims: TokenClaims): Promise<string> {
      const payload = Buffer.from(
        JSON.stringify({
          iss: ISSUER,
          sub: claims.username,
          sid: claims.sessionId,
          iat: Math.floor(claims.issuedAt.getTime() / 1000),
          exp: Math.floor(claims.expiresAt.getTime() / 1000),
          ...(claims.stage ? { tfa: claims.stage } : {}),
        }),
      ).toString('base64url');
      const input = `${HEADER}.${payload}`;
      return Promise.resolve(`${input}.${sign(input).toString('base64url')}`);
    },
    verify(token: string): Promise<TokenClaims | undefined> {
      return Promise.resolve(check(token));
    },
  };

  function check(token: string): TokenClaims | undefined {
    const known = verified.get(token);
    if (known) return known.expiresAt.getTime() <= now() ? undefined : known;
    const claims = checkSignedToken(token);
    if (claims) verified.set(token, claims);
    return claims;
  }

  function checkSignedToken(token: string): TokenClaims | undefined {
    const parts = token.split('.');
    if (parts.length !== 3) return undefined;
    const [header, payload, signature] = parts as [string, string, string];
    // svcd issues one header only; requiring it byte for byte pins the algorithm without parsing it.
    if (header !== HEADER) return undefined;
    // Compared as text, so only the one canonical encoding of the signature is accepted.
    const given = Buffer.from(signature);
    const expected = Buffer.from(sign(`${header}.${payload}`).toString('base64url'));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    const claims = parseJson(payload) as Payload | undefined;
    if (!claims || claims.iss !== ISSUER) return undefined;
    const { sub, sid, iat, exp, tfa } = claims;
    if (
      typeof sub !== 'string' ||
      typeof sid !== 'string' ||
      typeof iat !== 'number' ||
      typeof exp !== 'number'
    ) {
      return undefined;
    }
    if (tfa !== undefined && tfa !== 'login' && tfa !== 'verified') return undefined;
    if (exp * 1000 <= now()) return undefined;
    return {
      username: sub,
      sessionId: sid,
      issuedAt: new Date(iat * 1000),
      expiresAt: new Date(exp * 1000),
      ...(tfa === undefined ? {} : { stage: tfa }),
    };
  }
}
