import { createPrivateKey, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { ssh2 } from '@svc/platform/ssh2';
import { hostKeyFromPem } from '@svc/platform/ssh2-host-key';

const ecPem = (namedCurve: string): string =>
  generateKeyPairSync('ec', { namedCurve }).privateKey.export({ type: 'sec1', format: 'pem' }) as string;

describe('hostKeyFromPem', () => {
  test.each([
    ['prime256v1', 'ecdsa-sha2-nistp256', 'sha256'],
    ['secp384r1', 'ecdsa-sha2-nistp384', 'sha384'],
  ])(
    'signs as ssh2 does for %s: the signature verifies with the public key and the same hash',
    (curve, type, hash) => {
      const pem = ecPem(curve);
      const key = hostKeyFromPem(pem);
      expect(key.type).toBe(type);
      const data = Buffer.from('exchange hash');
      const signature = key.sign(data);
      expect(signature).toBeInstanceOf(Buffer);
      const publicKey = createPublicKey(createPrivateKey(pem));
      expect(verify(hash, data, publicKey, signature)).toBe(true);
      expect(verify(hash, Buffer.from('another hash'), publicKey, signature)).toBe(false);
      // ssh2's own key of the same PEM accepts it too.
      const own = ssh2.utils.parseKey(pem);
      if (own instanceof Error) throw own;
      expect(own.verify(data, signature)).toBe(true);
    },
  );

  test('a hash the key cannot sign with comes back as an Error, as ssh2 expects, not as a throw', () => {
    const key = hostKeyFromPem(ecPem('prime256v1'));
    expect(key.sign(Buffer.from('x'), 'no-such-hash')).toBeInstanceOf(Error);
  });

  test('a PEM that is not a key is refused at once', () => {
    expect(() => hostKeyFromPem('-----BEGIN NONSENSE-----\nAAAA\n-----END NONSENSE-----')).toThrow();
  });
});
