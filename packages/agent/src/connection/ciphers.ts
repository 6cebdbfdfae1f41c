import type { CipherAlgorithm } from 'ssh2';

/**
 * The ciphers the agent offers, in order: ssh2's defaults without chacha20-poly1305, which svcd never needs (it
 * always has AES-GCM) and whose poly1305 WebAssembly the agent bundles leave out (scripts/agent-bundle.ts).
 */
export const AGENT_CIPHERS: CipherAlgorithm[] = [
  'aes128-gcm@openssh.com',
  'aes256-gcm@openssh.com',
  'aes128-ctr',
  'aes192-ctr',
  'aes256-ctr',
];
