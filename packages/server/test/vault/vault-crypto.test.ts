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
  test('with the production scrypt parameters an unlock takes under a second and keeps the event loop free', async () => {
    const { record, dataKey } = await createVaultKey('prod-password', PRODUCTION_KDF);
    expect(record.kdf).toEqual(PRODUCTION_KDF);
    let ticks = 0;
    const ticker = setInterval(() => (ticks += 1), 10);
    const started = performance.now();
    const opened = await openVaultKey('prod-password', record);
    const ms = performance.now() - started;
    clearInterval(ticker);
    expect(opened?.equals(dataKey)).toBe(true);
    expect(ms).toBeLessThan(1000);
    // The derivation runs on the thread pool: timers keep firing meanwhile.
    expect(ticks).toBeGreaterThanOrEqual(Math.floor(ms / 10 / 3));
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
