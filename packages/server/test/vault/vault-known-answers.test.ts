/**
 * Known answers of the vault crypto: the fixed vectors in fixtures/vault-v1/crypto-vectors.json were made once by
 * scripts/make-vault-fixture.ts (the scrypt ones come from RFC 7914). A change to the key derivation, the NFC
 * handling, the key wrap, the associated data or the value format fails here, before it makes vaults unreadable.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, test } from 'vitest';
import {
  decryptValue,
  deriveKey,
  encryptValueWithNonce,
  openVaultKey,
  wrapDataKeyWithNonce,
  type KdfParams,
} from '../../src/core/vault/vault-crypto.js';

interface CryptoVectors {
  kdf: { source: string; password_utf8_hex: string; salt_hex: string; kdf: KdfParams; key_hex: string }[];
  key_wrap: {
    password_utf8_hex: string;
    kdf: KdfParams;
    salt_hex: string;
    kek_hex: string;
    nonce_hex: string;
    data_key_hex: string;
    wrapped_key_base64: string;
  };
  values: {
    data_key_hex: string;
    vectors: { client_id: string; key: string; plaintext: string; nonce_hex: string; stored: string }[];
  };
}

const vectors = JSON.parse(
  await readFile(new URL('../fixtures/vault-v1/crypto-vectors.json', import.meta.url), 'utf8'),
) as CryptoVectors;
const hex = (text: string) => Buffer.from(text, 'hex');
const utf8 = (bytesHex: string) => hex(bytesHex).toString('utf8');

describe('key derivation: scrypt of the NFC password, 32 bytes', () => {
  test.each(vectors.kdf.map((v) => [v.source, v] as const))('%s', async (_source, vector) => {
    const key = await deriveKey(utf8(vector.password_utf8_hex), hex(vector.salt_hex), vector.kdf);
    expect(key.toString('hex')).toBe(vector.key_hex);
  });

  test('the vectors hold one password in NFC and in NFD, which differ as bytes and derive one key', () => {
    const nfc = vectors.kdf.find((v) => v.source.endsWith('NFC'));
    const nfd = vectors.kdf.find((v) => v.source.endsWith('NFD'));
    expect(nfc && nfd).toBeTruthy();
    const [nfcText, nfdText] = [utf8(nfc?.password_utf8_hex ?? ''), utf8(nfd?.password_utf8_hex ?? '')];
    expect(nfcText).not.toBe(nfdText);
    expect(nfcText).toBe(nfcText.normalize('NFC'));
    expect(nfdText).toBe(nfdText.normalize('NFD'));
    expect(nfdText.normalize('NFC')).toBe(nfcText);
    expect(nfd?.key_hex).toBe(nfc?.key_hex);
  });
});

describe('the data key wrap', () => {
  const wrap = vectors.key_wrap;
  const record = {
    kdf: wrap.kdf,
    salt: hex(wrap.salt_hex),
    wrappedKey: Buffer.from(wrap.wrapped_key_base64, 'base64'),
  };

  test('is nonce ‖ AES-256-GCM of the data key ‖ tag, exactly the stored bytes', () => {
    const wrapped = wrapDataKeyWithNonce(hex(wrap.kek_hex), hex(wrap.data_key_hex), hex(wrap.nonce_hex));
    expect(wrapped.toString('base64')).toBe(wrap.wrapped_key_base64);
    expect(wrapped.subarray(0, 12).toString('hex')).toBe(wrap.nonce_hex);
    expect(wrapped).toHaveLength(12 + 32 + 16);
  });

  // Each derivation costs what an unlock costs (production parameters): the NFC form is covered above.
  test('opens with the password it was made with (NFD); not with a near miss', async () => {
    const password = utf8(wrap.password_utf8_hex);
    expect(password.normalize('NFC')).not.toBe(password);
    expect((await openVaultKey(password, record))?.toString('hex')).toBe(wrap.data_key_hex);
    // The same letters without their accents are another password.
    const withoutAccents = password.normalize('NFD').replace(/[\u0300-\u036f]/g, '');
    expect(await openVaultKey(withoutAccents, record)).toBeUndefined();
  });
});

describe('sealed values', () => {
  const dataKey = hex(vectors.values.data_key_hex);

  test.each(vectors.values.vectors.map((v) => [v.key, v] as const))(
    '%j: format byte 1 ‖ nonce ‖ ciphertext ‖ tag, exactly the stored text, and it opens',
    (_key, vector) => {
      const stored = encryptValueWithNonce(
        dataKey,
        vector.plaintext,
        vector.client_id,
        vector.key,
        hex(vector.nonce_hex),
      );
      expect(stored).toBe(vector.stored);
      const bytes = Buffer.from(vector.stored, 'base64');
      expect(bytes[0]).toBe(1);
      expect(bytes.subarray(1, 13).toString('hex')).toBe(vector.nonce_hex);
      expect(bytes).toHaveLength(1 + 12 + Buffer.byteLength(vector.plaintext) + 16);
      expect(decryptValue(dataKey, vector.stored, vector.client_id, vector.key)).toBe(vector.plaintext);
      // The entry's client and key are bound in: the same bytes under another entry do not open.
      expect(decryptValue(dataKey, vector.stored, `${vector.client_id}x`, vector.key)).toBeUndefined();
    },
  );
});
