import type { KeyObject } from 'node:crypto';
import type crypto from 'node:crypto';

/** The DER (SubjectPublicKeyInfo) of an X25519 public key: these 12 bytes, then the 32 raw bytes. */
const X25519_SPKI_PREFIX = Buffer.from('302a300506032b656e032100', 'hex');
const X25519_SPKI_LENGTH = X25519_SPKI_PREFIX.length + 32;
/** Public keys kept by their PEM text: an agent talks to one svcd (a bench's simulators too). */
const MAX_CACHED_PEMS = 16;

const isSpkiDer = (options: unknown): boolean => {
  const o = options as { type?: unknown; format?: unknown } | undefined;
  return o?.type === 'spki' && o.format === 'der';
};

/**
 * generateKeyPairSync whose X25519 public keys export to DER once: ssh2's key exchange (X25519 by default) exports
 * its public key as DER twice per handshake to cut the raw 32 bytes out of it, and OpenSSL 3's encoder takes 61 µs
 * each time (2026-11-29). The second export gets a copy of the first.
 *
 * Not through JWK, although its export takes 1 µs: node 20 allocates the JWK's strings while it holds the key's
 * mutex, and a garbage collection then may finalize the key generation job, whose destructor takes the same mutex:
 * the process hangs for good (seen in a bench simulator; `ssh2-quick-keys.test.ts` provokes it).
 */
export function quickX25519KeyPairs(
  original: typeof crypto.generateKeyPairSync,
): typeof crypto.generateKeyPairSync {
  const ssh2GenerateKeyPairSync = (type: string, options?: unknown): unknown => {
    const pair = (original as (t: string, o?: unknown) => { publicKey: KeyObject; privateKey: KeyObject })(
      type,
      options,
    );
    if (type !== 'x25519' || options !== undefined) return pair;
    const { publicKey } = pair;
    // export() is the public key class's (node has no KeyObject.prototype.export).
    const nodeExport = (Object.getPrototypeOf(publicKey) as { export: (options?: unknown) => unknown })
      .export;
    let der: Buffer | undefined;
    const exportKey = (exportOptions?: unknown) => {
      if (!isSpkiDer(exportOptions)) return nodeExport.call(publicKey, exportOptions);
      der ??= nodeExport.call(publicKey, exportOptions) as Buffer;
      return Buffer.from(der);
    };
    Object.defineProperty(publicKey, 'export', { value: exportKey });
    return pair;
  };
  return ssh2GenerateKeyPairSync as typeof crypto.generateKeyPairSync;
}

/**
 * createPublicKey that imports an X25519 public key given as DER through JWK: ssh2 wraps the peer's raw key in DER
 * for each handshake, which OpenSSL 3's decoder takes 70 µs to read back, the JWK import 6 µs. Anything else goes to
 * node's own.
 */
export function quickX25519Imports(original: typeof crypto.createPublicKey): typeof crypto.createPublicKey {
  const ssh2CreatePublicKey = (input: unknown): KeyObject => {
    const { key } = (input ?? {}) as { key?: unknown };
    if (
      isSpkiDer(input) &&
      Buffer.isBuffer(key) &&
      key.length === X25519_SPKI_LENGTH &&
      key.subarray(0, X25519_SPKI_PREFIX.length).equals(X25519_SPKI_PREFIX)
    ) {
      const x = key.subarray(X25519_SPKI_PREFIX.length).toString('base64url');
      return original({ key: { kty: 'OKP', crv: 'X25519', x }, format: 'jwk' });
    }
    return original(input as Parameters<typeof crypto.createPublicKey>[0]);
  };
  return ssh2CreatePublicKey;
}

/**
 * verify that reads a public key given as PEM text once: ssh2 checks svcd's signature in each handshake with the
 * host key's PEM, decoded again each time (0.15 ms against 0.05 ms with a KeyObject). A PEM that does not parse
 * goes to node's own verify, which reports it as before.
 */
export function cachedPemVerify(
  original: typeof crypto.verify,
  createPublicKey: typeof crypto.createPublicKey,
): typeof crypto.verify {
  const keys = new Map<string, KeyObject>();
  const keyOf = (pem: string): KeyObject | undefined => {
    let key = keys.get(pem);
    if (key) return key;
    try {
      key = createPublicKey(pem);
    } catch {
      return undefined;
    }
    if (keys.size >= MAX_CACHED_PEMS) keys.delete(keys.keys().next().value as string);
    keys.set(pem, key);
    return key;
  };
  const ssh2Verify = (...args: unknown[]): unknown => {
    const [algorithm, data, key, signature, callback] = args;
    const cached = typeof key === 'string' ? keyOf(key) : undefined;
    return (original as (...a: unknown[]) => unknown)(
      algorithm,
      data,
      cached ?? key,
      signature,
      ...(callback === undefined ? [] : [callback]),
    );
  };
  return ssh2Verify as typeof crypto.verify;
}
