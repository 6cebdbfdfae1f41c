// Import order matters: the swap module runs before ssh2 loads, and the body below runs after it. Plain imports
// (rather than createRequire) keep that order both under node's ESM loader and in the one-file agent bundle.
import { restoreCrypto } from './ssh2-crypto-swap.js';
import ssh2Module from 'ssh2';

restoreCrypto();

/** ssh2, loaded with the quicker crypto functions of ssh2-crypto-swap.ts: ssh2 keeps them, everything else node's own. */
export const ssh2 = ssh2Module;
export { pooledRandomFill } from './pooled-random-fill.js';
