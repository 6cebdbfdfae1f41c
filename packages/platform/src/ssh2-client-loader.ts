// As ssh2-loader.ts, for ssh2's client alone: ssh2's main module also loads its server, key generator and HTTP
// agents (node:http and node:https), which the agent never uses. Import order matters as there.
import type { Client } from 'ssh2';
import { restoreRandomFillSync } from './ssh2-random-swap.js';
import ClientModule from 'ssh2/lib/client.js';

restoreRandomFillSync();

/** ssh2's Client, loaded with a pooled randomFillSync: ssh2 keeps it, everything else keeps node's own. */
export const ssh2 = { Client: ClientModule as typeof Client };
