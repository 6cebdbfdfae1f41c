import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import type * as Ssh2 from 'ssh2';

type RandomFillSync = (buffer: Buffer, offset?: number, size?: number) => Buffer;

/** Bytes fetched from the CSPRNG at once; each byte is handed out once. */
const POOL_SIZE = 16 * 1024;
/** Larger requests (keys, nonces) go straight to the CSPRNG. */
const MAX_POOLED = 256;

/**
 * randomFillSync served from a pool refilled by the real one. ssh2 asks for 4–19 bytes of random padding per
 * packet, and node's randomFillSync costs ~5 µs a call whatever the size: a tenth of svcd's CPU when relaying a
 * tunnel. The bytes are the same CSPRNG output, fetched 16 KiB at a time.
 */
export function pooledRandomFill(original: RandomFillSync): RandomFillSync {
  let pool: Buffer = Buffer.alloc(0);
  let used = 0;
  return (buffer, offset = 0, size = buffer.length - offset) => {
    if (size > MAX_POOLED || !Buffer.isBuffer(buffer)) return original(buffer, offset, size);
    if (used + size > pool.length) {
      pool = original(Buffer.allocUnsafe(POOL_SIZE));
      used = 0;
    }
    pool.copy(buffer, offset, used, used + size);
    used += size;
    return buffer;
  };
}

/**
 * Loads ssh2 with the pooled randomFillSync. ssh2 takes its crypto functions when its modules first load, so the
 * pooled one is swapped in only for that moment: ssh2 keeps it, everything else keeps node's own.
 */
function loadSsh2(): typeof Ssh2 {
  const require = createRequire(import.meta.url);
  const original = crypto.randomFillSync as unknown as RandomFillSync;
  (crypto as unknown as { randomFillSync: RandomFillSync }).randomFillSync = pooledRandomFill(original);
  try {
    return require('ssh2') as typeof Ssh2;
  } finally {
    (crypto as unknown as { randomFillSync: RandomFillSync }).randomFillSync = original;
  }
}

export const ssh2 = loadSsh2();
