import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { expect, test } from 'vitest';
// The built module: vitest's transform does not take TypeScript's .cts files.
import { AESGCMCipher, AESGCMDecipher, useNativeSsh2Crypto } from '../dist/ssh2-lazy-crypto.cjs';

/** ssh2's own binding, as an independent implementation to check against. */
const ssh2Binding = createRequire(import.meta.url)(
  'ssh2/lib/protocol/crypto/build/Release/sshcrypto.node',
) as {
  AESGCMCipher: new (name: string, key: Buffer, iv: Buffer) => { encrypt(packet: Buffer): void };
  AESGCMDecipher: new (
    name: string,
    key: Buffer,
    iv: Buffer,
  ) => {
    decrypt(packet: Uint8Array, length: number, tag: Buffer): void;
  };
};

const key = randomBytes(16);
const iv = randomBytes(12);
// The invocation counter is about to carry over a byte, which the next nonce must do too.
iv.writeUInt32BE(0xffffffff, 8);

/** An SSH packet as ssh2 lays it out for AES-GCM: length, padding length, payload, padding, room for the tag. */
function packet(payload: Buffer): Buffer {
  const padding = 16 - ((1 + payload.length) % 16) + 16;
  const body = 1 + payload.length + padding;
  const out = Buffer.alloc(4 + body + 16);
  out.writeUInt32BE(body, 0);
  out[4] = padding;
  payload.copy(out, 5);
  return out;
}

/** Decrypts an encrypted packet with `decipher`; returns its payload. */
function open(decipher: { decrypt(p: Uint8Array, l: number, t: Buffer): void }, sealed: Buffer): Buffer {
  const length = sealed.readUInt32BE(0);
  const body = Buffer.from(sealed.subarray(4, 4 + length));
  decipher.decrypt(body, length, Buffer.from(sealed.subarray(4 + length)));
  return body.subarray(1, length - body[0]!);
}

// First in this file: the binding is not loaded yet, so this is the JavaScript path.
test('before the binding loads, a packet whose tag does not match is refused', () => {
  const sealed = packet(randomBytes(64));
  new AESGCMCipher('aes-128-gcm', key, iv).encrypt(sealed);
  sealed[sealed.length - 1]! ^= 1;
  expect(() => open(new AESGCMDecipher('aes-128-gcm', key, iv), sealed)).toThrow();
});

test('packets sealed in JavaScript, then natively after useNativeSsh2Crypto(), open with ssh2 and back', () => {
  const payloads = Array.from({ length: 6 }, (_, i) => randomBytes(100 + i * 1000));
  const ours = new AESGCMCipher('aes-128-gcm', key, iv);
  const theirs = new ssh2Binding.AESGCMCipher('aes-128-gcm', key, iv);
  const oursOpen = new AESGCMDecipher('aes-128-gcm', key, iv);
  const theirsOpen = new ssh2Binding.AESGCMDecipher('aes-128-gcm', key, iv);
  for (const [n, payload] of payloads.entries()) {
    // Halfway through, the binding loads: both objects carry on with their key and nonce.
    if (n === 3) expect(useNativeSsh2Crypto()).toBe(true);
    const sealedByUs = packet(payload);
    ours.encrypt(sealedByUs);
    const sealedBySsh2 = packet(payload);
    theirs.encrypt(sealedBySsh2);
    expect(sealedByUs.subarray(5, 5 + payload.length)).not.toEqual(payload);
    expect(open(theirsOpen, sealedByUs)).toEqual(payload);
    expect(open(oursOpen, sealedBySsh2)).toEqual(payload);
  }
});
