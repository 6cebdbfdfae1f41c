// Import order matters: the swap module runs before ssh2 loads, and the body below runs after it. Plain imports
// (rather than createRequire) keep that order both under node's ESM loader and in the one-file agent bundle.
import { restoreRandomFillSync } from './ssh2-random-swap.js';
import ssh2Module from 'ssh2';

restoreRandomFillSync();

/** ssh2, loaded with a pooled randomFillSync: ssh2 keeps it, everything else keeps node's own. */
export const ssh2 = ssh2Module;
export { pooledRandomFill } from './pooled-random-fill.js';
