import crypto from 'node:crypto';
import { pooledRandomFill } from './pooled-random-fill.js';
import { cachedPemVerify, quickX25519Imports, quickX25519KeyPairs } from './ssh2-quick-keys.js';

type Swappable = 'randomFillSync' | 'generateKeyPairSync' | 'createPublicKey' | 'verify';

/**
 * Evaluated just before ssh2 (see ssh2-loader.ts): swaps node:crypto functions that ssh2 captures as its modules
 * load for quicker ones giving the same results (a pooled randomFillSync, the X25519 key exchange without OpenSSL's
 * DER encoder and decoder, and a verify that reads a host key's PEM once: ssh2-quick-keys.ts);
 * `restoreCrypto` puts node's own back right after, so nothing else sees them.
 */
const originals = {
  randomFillSync: crypto.randomFillSync,
  generateKeyPairSync: crypto.generateKeyPairSync,
  createPublicKey: crypto.createPublicKey,
  verify: crypto.verify,
};
const swaps: { [K in Swappable]: unknown } = {
  randomFillSync: pooledRandomFill(originals.randomFillSync),
  generateKeyPairSync: quickX25519KeyPairs(originals.generateKeyPairSync),
  createPublicKey: quickX25519Imports(originals.createPublicKey),
  verify: cachedPemVerify(originals.verify, originals.createPublicKey),
};
const writable = crypto as unknown as Record<Swappable, unknown>;
for (const name of Object.keys(swaps) as Swappable[]) writable[name] = swaps[name];

/** Puts node's own functions back. */
export function restoreCrypto(): void {
  for (const name of Object.keys(originals) as Swappable[]) writable[name] = originals[name];
}
