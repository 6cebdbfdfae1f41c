/**
 * The vault's cryptography, on node:crypto. Each entry value is sealed with AES-256-GCM under a random 256-bit data
 * key. The data key is stored wrapped (AES-256-GCM again) by a key derived from the vault password with scrypt and
 * a random per-vault salt. The wrap's GCM tag is the password verifier: a wrong password fails it without touching
 * any entry, and nothing derived from the password alone (a hash to compare) is stored.
 */
import { createCipheriv, createDecipheriv, randomBytes, scrypt } from 'node:crypto';

/** scrypt cost; stored with the vault so that an unlock uses the parameters the vault was made with. */
export interface KdfParams {
  algorithm: 'scrypt';
  /** CPU/memory cost, a power of two. Memory used is about 128 × N × r bytes. */
  N: number;
  r: number;
  p: number;
}

/** About 170 ms and 64 MiB per derivation on the project's 2-core machine (BENCHMARKS.md, vault unlock). */
export const PRODUCTION_KDF: KdfParams = { algorithm: 'scrypt', N: 2 ** 16, r: 8, p: 1 };

/** What the vault keeps on disk to open itself: never the password, never the data key in clear. */
export interface VaultKeyRecord {
  kdf: KdfParams;
  salt: Buffer;
  /** nonce ‖ ciphertext of the data key ‖ GCM tag. */
  wrappedKey: Buffer;
}

const KEY_BYTES = 32;
const SALT_BYTES = 16;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const CIPHER = 'aes-256-gcm';
const KEY_WRAP_AAD = Buffer.from('svc-vault-data-key-v1');
/** First byte of every stored value, so the format can change later. */
const VALUE_FORMAT = 1;

/** The key-encryption key: scrypt of the NFC form of the password, 32 bytes. */
export function deriveKey(password: string, salt: Buffer, kdf: KdfParams): Promise<Buffer> {
  const { N, r, p } = kdf;
  // The callback form runs on libuv's thread pool: the event loop stays free during the ~170 ms.
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, KEY_BYTES, { N, r, p, maxmem: 256 * N * r }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

function seal(key: Buffer, plaintext: Buffer, aad: Buffer, nonce: Buffer): Buffer {
  if (nonce.length !== NONCE_BYTES) throw new Error(`a nonce is ${NONCE_BYTES} bytes`);
  const cipher = createCipheriv(CIPHER, key, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]);
}

/** The plaintext, or undefined when the tag does not match (wrong key, or changed bytes). */
function open(key: Buffer, sealed: Buffer, aad: Buffer): Buffer | undefined {
  if (sealed.length < NONCE_BYTES + TAG_BYTES) return undefined;
  const nonce = sealed.subarray(0, NONCE_BYTES);
  const tag = sealed.subarray(sealed.length - TAG_BYTES);
  const decipher = createDecipheriv(CIPHER, key, nonce, { authTagLength: TAG_BYTES });
  decipher.setAAD(aad);
  decipher.setAuthTag(tag);
  try {
    // GCM is a stream mode: update() yields all the plaintext and final() only checks the tag (it throws on a
    // mismatch), so nothing is returned before the tag has been verified.
    const plaintext = decipher.update(sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES));
    decipher.final();
    return plaintext;
  } catch {
    return undefined;
  }
}

/** A new vault: a random data key, wrapped under the password. */
export async function createVaultKey(
  password: string,
  kdf: KdfParams,
): Promise<{ record: VaultKeyRecord; dataKey: Buffer }> {
  const salt = randomBytes(SALT_BYTES);
  const kek = await deriveKey(password, salt, kdf);
  const dataKey = randomBytes(KEY_BYTES);
  try {
    return {
      record: { kdf, salt, wrappedKey: wrapDataKeyWithNonce(kek, dataKey, randomBytes(NONCE_BYTES)) },
      dataKey,
    };
  } finally {
    kek.fill(0);
  }
}

/**
 * nonce ‖ AES-256-GCM of the data key under the key-encryption key ‖ tag. Only the known-answer tests choose the
 * nonce; a new vault draws a random one.
 */
export function wrapDataKeyWithNonce(kek: Buffer, dataKey: Buffer, nonce: Buffer): Buffer {
  return seal(kek, dataKey, KEY_WRAP_AAD, nonce);
}

/** The data key, or undefined for a wrong password. */
export async function openVaultKey(password: string, record: VaultKeyRecord): Promise<Buffer | undefined> {
  const kek = await deriveKey(password, record.salt, record.kdf);
  try {
    return open(kek, record.wrappedKey, KEY_WRAP_AAD);
  } finally {
    kek.fill(0);
  }
}

/** Binds a value to its entry's client and key: a stored value moved to another row fails to open. */
const entryAad = (clientId: string, key: string): Buffer =>
  Buffer.from(JSON.stringify(['svc-vault-entry-v1', clientId, key]));

/** The stored form of a value: base64 of format byte ‖ nonce ‖ ciphertext ‖ tag. */
export function encryptValue(dataKey: Buffer, value: string, clientId: string, key: string): string {
  return encryptValueWithNonce(dataKey, value, clientId, key, randomBytes(NONCE_BYTES));
}

/**
 * encryptValue with a chosen nonce, for the known-answer tests only: a nonce must never repeat under one key, so
 * the service always calls encryptValue, which draws a fresh one.
 */
export function encryptValueWithNonce(
  dataKey: Buffer,
  value: string,
  clientId: string,
  key: string,
  nonce: Buffer,
): string {
  const sealed = seal(dataKey, Buffer.from(value, 'utf8'), entryAad(clientId, key), nonce);
  return Buffer.concat([Buffer.of(VALUE_FORMAT), sealed]).toString('base64');
}

/** The value, or undefined when the stored bytes do not open under this key for this client and key. */
export function decryptValue(
  dataKey: Buffer,
  stored: string,
  clientId: string,
  key: string,
): string | undefined {
  const bytes = Buffer.from(stored, 'base64');
  if (bytes[0] !== VALUE_FORMAT) return undefined;
  return open(dataKey, bytes.subarray(1), entryAad(clientId, key))?.toString('utf8');
}
