import { describe, expect, test } from 'vitest';
import {
  createVaultKey,
  decryptValue,
  encryptValue,
  openVaultKey,
  PRODUCTION_KDF,
} from '../../src/core/vault/vault-crypto.js';

const CHEAP = { algorithm: 'scrypt', N: 1024, r: 8, p: 1 } as const;

describe('vault crypto', () => {
  test('with the production scrypt parameters an unlock keeps the event loop free', async () => {
    const { record, dataKey } = await createVaultKey('prod-password', PRODUCTION_KDF);
    expect(record.kdf).toEqual(PRODUCTION_KDF);
    // The derivation runs on the thread pool: the event loop turns before the key is ready. A derivation on the
    // main thread would resolve first (its promise settles before any check-phase callback).
    // Its speed (unlock ≤ 1 s) is measured by bench/vault.bench.ts.
    let loopTurned = false;
    const opening = openVaultKey('prod-password', record);
    setImmediate(() => (loopTurned = true));
    const opened = await opening;
    expect(loopTurned).toBe(true);
    expect(opened?.equals(dataKey)).toBe(true);
    expect(await openVaultKey('prod-passwore', record)).toBeUndefined();
  });

  test('a wrong password fails on the wrapped key alone; salts and keys differ per vault', async () => {
    const one = await createVaultKey('same-password', CHEAP);
    const two = await createVaultKey('same-password', CHEAP);
    expect(one.record.salt.equals(two.record.salt)).toBe(false);
    expect(one.dataKey.equals(two.dataKey)).toBe(false);
    expect(one.dataKey).toHaveLength(32);
    expect(await openVaultKey('same-passworD', one.record)).toBeUndefined();
    expect(await openVaultKey('', one.record)).toBeUndefined();
    const tampered = Buffer.from(one.record.wrappedKey);
    tampered[20] = (tampered[20] ?? 0) ^ 1;
    expect(await openVaultKey('same-password', { ...one.record, wrappedKey: tampered })).toBeUndefined();
  });

  test('values are sealed with a fresh nonce and open only under their key, client and entry key', async () => {
    const { dataKey } = await createVaultKey('pw-1234', CHEAP);
    const other = (await createVaultKey('pw-1234', CHEAP)).dataKey;
    const sealed = encryptValue(dataKey, 'plain value ✓', 'client-1', 'k');
    expect(encryptValue(dataKey, 'plain value ✓', 'client-1', 'k')).not.toBe(sealed);
    expect(Buffer.from(sealed, 'base64').toString('utf8')).not.toContain('plain value');
    expect(decryptValue(dataKey, sealed, 'client-1', 'k')).toBe('plain value ✓');
    expect(decryptValue(other, sealed, 'client-1', 'k')).toBeUndefined();
    expect(decryptValue(dataKey, sealed, 'client-2', 'k')).toBeUndefined();
    expect(decryptValue(dataKey, sealed, 'client-1', 'k2')).toBeUndefined();
    expect(decryptValue(dataKey, 'AAAA', 'client-1', 'k')).toBeUndefined();
  });
});
