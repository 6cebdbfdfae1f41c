import crypto from 'node:crypto';
import { pooledRandomFill, type RandomFillSync } from './pooled-random-fill.js';

/**
 * Evaluated just before ssh2 (see ssh2-loader.ts): swaps node:crypto's randomFillSync for the pooled one, which
 * ssh2 captures as its modules load; `restoreRandomFillSync` puts node's own back right after.
 */
const original = crypto.randomFillSync as unknown as RandomFillSync;
(crypto as unknown as { randomFillSync: RandomFillSync }).randomFillSync = pooledRandomFill(original);

export function restoreRandomFillSync(): void {
  (crypto as unknown as { randomFillSync: RandomFillSync }).randomFillSync = original;
}
