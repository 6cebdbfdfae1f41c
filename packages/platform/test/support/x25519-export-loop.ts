// Generates X25519 key pairs through quickX25519KeyPairs and exports each public key twice as ssh2 does, as many
// times as argv[2] says, then prints "done". Run under --stress-compaction by ssh2-quick-keys.test.ts.
import crypto from 'node:crypto';
import { quickX25519KeyPairs } from '../../src/ssh2-quick-keys.js';

const generate = quickX25519KeyPairs(crypto.generateKeyPairSync);
const rounds = Number(process.argv[2]);
for (let i = 0; i < rounds; i++) {
  const { publicKey } = generate('x25519');
  publicKey.export({ type: 'spki', format: 'der' });
  publicKey.export({ type: 'spki', format: 'der' });
}
console.log('done');
