import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';
import { cachedPemVerify, quickX25519Imports, quickX25519KeyPairs } from '../src/ssh2-quick-keys.js';

const generate = quickX25519KeyPairs(crypto.generateKeyPairSync);
const importKey = quickX25519Imports(crypto.createPublicKey);

describe('the X25519 key exchange with one DER encoding and without the DER decoder', () => {
  test("a key pair's public key exports the same DER as node's own, and every other format as before", () => {
    const { publicKey, privateKey } = generate('x25519');
    const fromNode = crypto.createPublicKey(privateKey);
    expect(publicKey.export({ type: 'spki', format: 'der' })).toEqual(
      fromNode.export({ type: 'spki', format: 'der' }),
    );
    expect(publicKey.export({ type: 'spki', format: 'pem' })).toBe(
      fromNode.export({ type: 'spki', format: 'pem' }),
    );
    expect(publicKey.export({ format: 'jwk' })).toEqual(fromNode.export({ format: 'jwk' }));
    // The second DER export is a copy of the first, not the same Buffer (ssh2 may slice it).
    const [first, second] = [
      publicKey.export({ type: 'spki', format: 'der' }),
      publicKey.export({ type: 'spki', format: 'der' }),
    ];
    expect(second).toEqual(first);
    expect(second).not.toBe(first);
  });

  test('both ends of an exchange through the DER of the other end agree, as with node alone', () => {
    const a = generate('x25519');
    const b = crypto.generateKeyPairSync('x25519');
    const bDer = b.publicKey.export({ type: 'spki', format: 'der' });
    const aDer = a.publicKey.export({ type: 'spki', format: 'der' });
    const secretA = crypto.diffieHellman({
      privateKey: a.privateKey,
      publicKey: importKey({ key: bDer, type: 'spki', format: 'der' }),
    });
    const secretB = crypto.diffieHellman({
      privateKey: b.privateKey,
      publicKey: crypto.createPublicKey({ key: aDer, type: 'spki', format: 'der' }),
    });
    expect(secretA.length).toBe(32);
    expect(secretA).toEqual(secretB);
  });

  test('exporting the public keys does not hang the process when a garbage collection runs meanwhile', async () => {
    // Through node 20's JWK export (the first version of this) the loop hung for good, in 4 runs of 4 under
    // --stress-compaction, which makes every collection a full one: see quickX25519KeyPairs.
    const loop = fileURLToPath(new URL('./support/x25519-export-loop.ts', import.meta.url));
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--stress-compaction', '--import', 'tsx', loop, '20000'],
      { timeout: 45_000 },
    );
    expect(stdout.trim()).toBe('done');
  }, 60_000);

  test('other key types and other inputs go to node unchanged', () => {
    const ec = generate('ec', { namedCurve: 'P-256' });
    expect(ec.publicKey.asymmetricKeyType).toBe('ec');
    const der = ec.publicKey.export({ type: 'spki', format: 'der' });
    expect(importKey({ key: der, type: 'spki', format: 'der' }).asymmetricKeyType).toBe('ec');
    // 44 bytes that are not an X25519 SPKI are refused by node, as before.
    expect(() => importKey({ key: Buffer.alloc(44), type: 'spki', format: 'der' })).toThrow();
  });
});

describe('verify with a PEM read once', () => {
  const { publicKey, privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pem = publicKey.export({ type: 'spki', format: 'pem' }) as string;
  const data = Buffer.from('exchange hash');
  const signature = crypto.sign('sha256', data, privateKey);

  test('answers as node does, reading each PEM once', () => {
    let reads = 0;
    const countingImport = ((key: Parameters<typeof crypto.createPublicKey>[0]) => {
      reads += 1;
      return crypto.createPublicKey(key);
    }) as typeof crypto.createPublicKey;
    const verify = cachedPemVerify(crypto.verify, countingImport);
    expect(verify('sha256', data, pem, signature)).toBe(true);
    expect(verify('sha256', Buffer.from('other'), pem, signature)).toBe(false);
    expect(verify('sha256', data, publicKey, signature)).toBe(true);
    expect(reads).toBe(1);
  });

  test('a PEM that does not parse is reported by node as before', () => {
    const verify = cachedPemVerify(crypto.verify, crypto.createPublicKey);
    expect(() => verify('sha256', data, 'not a key', signature)).toThrow();
  });
});
