// As ssh2-loader.ts, for ssh2's client alone: ssh2's main module also loads its server, key generator and HTTP
// agents (node:http and node:https), which the agent never uses. Import order matters as there.
import type { Client } from 'ssh2';
import { restoreCrypto } from './ssh2-crypto-swap.js';
import ClientModule from 'ssh2/lib/client.js';

restoreCrypto();

/** ssh2's Client, loaded with the quicker crypto functions of ssh2-crypto-swap.ts (as ssh2-loader.ts). */
export const ssh2 = { Client: ClientModule as typeof Client };
