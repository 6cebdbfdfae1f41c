export type RandomFillSync = (buffer: Buffer, offset?: number, size?: number) => Buffer;

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
